-- a new body of a function a view calls
CREATE OR REPLACE FUNCTION ext_double(int) RETURNS int IMMUTABLE STRICT LANGUAGE sql AS 'SELECT $1 * 3';
