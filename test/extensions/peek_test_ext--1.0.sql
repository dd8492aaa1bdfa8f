\echo Use "CREATE EXTENSION peek_test_ext" to load this file. \quit
CREATE FUNCTION ext_double(int) RETURNS int IMMUTABLE STRICT LANGUAGE sql AS 'SELECT $1 * 2';
CREATE FUNCTION ext_plus(int, int) RETURNS int IMMUTABLE STRICT LANGUAGE sql AS 'SELECT $1 + $2';
CREATE OPERATOR +# (LEFTARG = int, RIGHTARG = int, FUNCTION = ext_plus);
CREATE TYPE ext_mood AS ENUM ('low', 'high');
