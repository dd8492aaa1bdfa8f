-- a function a view calls dropped, and made again
DROP FUNCTION ext_double(int);
CREATE FUNCTION ext_double(int) RETURNS int IMMUTABLE STRICT LANGUAGE sql AS 'SELECT $1 * 2';
