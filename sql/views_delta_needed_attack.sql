-- Attacks on delta joins that load a touched group's rows of a shared
-- input only where another input has updates in the group (arranged.c
-- inputs_needed), and on a round's single read feeding the shared
-- arrangement: rows moving between keys (a key column updated), deletes,
-- NULL keys, duplicates, rounds where one input alone changes and rounds
-- where several do at different times, inner, left and 3-way joins and a
-- grouping over the same inputs, an index created and dropped on a key
-- while rounds run.  Each view against its query over its inputs at every
-- time (view_mismatches).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE dna AS (k int, v int);
CREATE TYPE dnb AS (k int, w int);
CREATE TYPE dnc AS (w int, z int);
SELECT peek.create_collection('dnas', 'dna');
SELECT peek.create_collection('dnbs', 'dnb');
SELECT peek.create_collection('dncs', 'dnc');
-- the collections' contents, to retract what they hold
CREATE TABLE dn_a (r dna);
CREATE TABLE dn_b (r dnb);
CREATE TABLE dn_c (r dnc);

-- one write: n rows inserted and up to m retracted (key moves are both)
CREATE FUNCTION dn_write(coll text, n int, m int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    ins text;
    del text;
    tab text := replace(coll, 'dn', 'dn_');
    typ text := left(coll, 3);
BEGIN
    tab := left(tab, 4);
    EXECUTE format($q$SELECT coalesce(array_agg(r), '{}')::%s[] FROM
                      (SELECT r FROM %s ORDER BY random() LIMIT %s) d$q$, typ, tab, m) INTO del;
    EXECUTE format($q$SELECT coalesce(array_agg(ROW(CASE WHEN random() < 0.1 THEN NULL
                                             ELSE (random() * 5)::int END,
                                        (random() * 4)::int)::%s), '{}')
                      FROM generate_series(1, %s)$q$, typ, n) INTO ins;
    EXECUTE format('SELECT peek.write(%L, %L::%s[], %L::%s[])', coll, ins, typ, del, typ);
    EXECUTE format('WITH d AS (SELECT unnest(%L::%s[]) r) DELETE FROM %s t WHERE t.ctid IN (SELECT DISTINCT ON (d.r::text) t2.ctid FROM %s t2 JOIN d ON t2.r::text = d.r::text)',
                   del, typ, tab, tab);
    EXECUTE format('INSERT INTO %s SELECT unnest(%L::%s[])', tab, ins, typ);
END $f$;

SELECT setseed(0.25);
SELECT dn_write('dnas', 8, 0), dn_write('dnbs', 6, 0), dn_write('dncs', 5, 0);
SELECT peek.create_view('dn_inner', $$
    SELECT a.k, a.v, b.w FROM peek.persist_peek(NULL::dna, 'dnas') a
      JOIN peek.persist_peek(NULL::dnb, 'dnbs') b ON a.k = b.k$$);
SELECT peek.create_view('dn_left', $$
    SELECT a.k, a.v, b.w FROM peek.persist_peek(NULL::dna, 'dnas') a
      LEFT JOIN peek.persist_peek(NULL::dnb, 'dnbs') b ON a.k = b.k$$);
SELECT peek.create_view('dn_chain', $$
    SELECT a.v, b.w, c.z FROM peek.persist_peek(NULL::dna, 'dnas') a
      JOIN peek.persist_peek(NULL::dnb, 'dnbs') b ON a.k = b.k
      JOIN peek.persist_peek(NULL::dnc, 'dncs') c ON c.w = b.w$$);
SELECT peek.create_view('dn_grouped', $$
    SELECT k, count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::dna, 'dnas') GROUP BY k$$);
SELECT peek.create_view('dn_self', $$
    SELECT x.v AS xv, y.v AS yv FROM peek.persist_peek(NULL::dna, 'dnas') x
      JOIN peek.persist_peek(NULL::dna, 'dnas') y ON x.k = y.k$$);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE state = 'ready' AND upper >= 1$$);

-- one input alone, then the other, then both, in quick succession (several
-- times a round) and one at a time; an index made and dropped between
CREATE FUNCTION dn_burst(steps int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    FOR i IN 1 .. steps LOOP
        CASE i % 5
            WHEN 0 THEN PERFORM dn_write('dnas', 2, 2);
            WHEN 1 THEN PERFORM dn_write('dnas', 1, 1);
            WHEN 2 THEN PERFORM dn_write('dnbs', 2, 2);
            WHEN 3 THEN PERFORM dn_write('dncs', 1, 1), dn_write('dnbs', 1, 1);
            ELSE PERFORM dn_write('dnas', 0, 1), dn_write('dnbs', 1, 0);
        END CASE;
    END LOOP;
END $f$;
-- every view past every input's last write (an empty write to each
-- after the others: the collections' times are one clock)
CREATE FUNCTION dn_tick() RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('dnas', '{}'::dna[], '{}') + peek.write('dnbs', '{}'::dnb[], '{}')
           + peek.write('dncs', '{}'::dnc[], '{}') $$;
-- (against the collections' durable uppers, which their writes commit,
-- and so in a statement after the tick's: the ones peek.collections shows
-- are those the runtime published, which right after a restart had not
-- reached the writes yet, and the views reached them without having taken
-- the writes; TAP 383_view_restart_latest)
CREATE FUNCTION dn_settled() RETURNS boolean LANGUAGE sql AS $$
    SELECT bool_and(v.upper >= (SELECT min(m.upper) FROM
                                  (SELECT max(x.upper) AS upper FROM peek.objects c
                                     JOIN peek.uppers x ON x.object = c.id & 4294967295
                                    WHERE c.name IN ('dnas', 'dnbs', 'dncs') GROUP BY c.id) m))
      FROM peek.views v $$;
SELECT dn_burst(10);
SELECT dn_tick() >= 0 AS ticked;
SELECT wait_for('SELECT dn_settled()');
SELECT peek.create_index('dnas_k', 'dnas', '{k}');
SELECT dn_burst(10);
SELECT dn_tick() >= 0 AS ticked;
SELECT wait_for('SELECT dn_settled()');
SELECT dn_write('dnbs', 1, 1);
SELECT dn_tick() >= 0 AS ticked;
SELECT wait_for('SELECT dn_settled()');
SELECT dn_write('dnas', 1, 1);
SELECT dn_tick() >= 0 AS ticked;
SELECT wait_for('SELECT dn_settled()');
SELECT peek.drop_index('dnas_k');
SELECT dn_burst(15);
SELECT dn_tick() >= 0 AS ticked;
SELECT wait_for('SELECT dn_settled()');
SELECT restart_maintenance();
SELECT dn_burst(10);
SELECT dn_tick() >= 0 AS ticked;
SELECT wait_for('SELECT dn_settled()');
SELECT name, state FROM peek.views ORDER BY name;
-- the runtime's own arrangements were read (besides the index's), and
-- the chain's rows are seen at the latest time
SELECT wait_for($$SELECT count(*) > 0 FROM peek.registry_status() WHERE id < 0 AND NOT dropped$$, 10) AS own_arranged,
       wait_for($$SELECT count(*) > 0 FROM peek.persist_peek(NULL::dn_chain, 'dn_chain')$$, 10) AS chain_seen;
-- the mirrors hold what the collections do, and the joins are not empty
SELECT (SELECT count(*) FROM ((SELECT (r).* FROM dn_a) EXCEPT ALL
                              SELECT * FROM peek.persist_peek(NULL::dna, 'dnas')) d) AS a_off,
       (SELECT count(*) FROM peek.persist_peek(NULL::dna, 'dnas')) = (SELECT count(*) FROM dn_a) AS a_same,
       (SELECT count(*) FROM peek.persist_peek(NULL::dnb, 'dnbs')) = (SELECT count(*) FROM dn_b) AS b_same,
       (SELECT count(*) > 0 FROM peek.persist_peek(NULL::dn_chain, 'dn_chain')) AS chain_rows;
SELECT * FROM views_bad_times();

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION dn_write(text, int, int), dn_burst(int), dn_tick(), dn_settled();
DROP TABLE dn_a, dn_b, dn_c;
DROP TYPE dna, dnb, dnc;
