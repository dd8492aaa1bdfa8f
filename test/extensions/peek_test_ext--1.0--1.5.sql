-- a function a view calls renamed
ALTER FUNCTION ext_double(int) RENAME TO ext_twice;
