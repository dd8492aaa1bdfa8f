-- a collection created by an extension's script
CREATE TYPE ext_row AS (k int);
SELECT peek.create_collection('ext_coll', 'ext_row');
