-- a maintained view created by an extension's script
SELECT peek.create_view('ext_made', $$SELECT k, ext_double(v) AS d FROM peek.persist_peek(NULL::esrow, 'esc')$$);
