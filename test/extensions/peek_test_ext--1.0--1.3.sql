-- a value of an enum a view names renamed
ALTER TYPE ext_mood RENAME VALUE 'low' TO 'lower';
