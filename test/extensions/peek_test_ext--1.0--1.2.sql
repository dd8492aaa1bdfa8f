-- a new body of the function of an operator a view uses
CREATE OR REPLACE FUNCTION ext_plus(int, int) RETURNS int IMMUTABLE STRICT LANGUAGE sql AS 'SELECT $1 - $2';
