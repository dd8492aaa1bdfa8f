-- Attacks on min and max kept as a group's states (accums_functions.c,
-- accums.c), each view against PostgreSQL's evaluation of its query over
-- its inputs at every time, read by persist peek and by index peek on an
-- index of the view.  1: a random workload over two collections (seeded):
-- rows inserted in copies, retracted one copy or all of them, the kept
-- max and min of v, of text and of other columns retracted, rows moving
-- between groups, a row retracted before it is inserted at the same time;
-- under views that mix min and max with count, sum, avg and bool_and,
-- FILTER clauses, HAVING over max, max(v + w), max(coalesce(w, 0)), min
-- of varchar, a domain over int with a CHECK, text under an ICU collation
-- and under "C", max(v::text), an expression key, GROUP BY of nothing,
-- UNION ALL branches, joins grouped by their key and by the other side's
-- column (a stage over anonymous records), a left join, views over a view
-- whose rows change; the runtime restarted mid-workload.  2: rows whose
-- count goes below zero (10^12 copies too): the view holds none of such a
-- row, as the query path and a view hydrated then do; at the times a
-- persist peek answers, the view is its query.  3: the internal states'
-- memory reset (a max beside bool_and, 3,000 groups whose kept values are
-- retracted round after round), each group's states computed again.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TYPE er AS (g int, v int, w int, s text, d posint, vc varchar(8));
SELECT peek.create_collection('ec', 'er');
CREATE TYPE er2 AS (g int, name text, lim int);
SELECT peek.create_collection('ec2', 'er2');
-- the collection's contents as the workload wrote them (rows with their
-- multiplicity), to pick retractions from
CREATE TABLE ec_now (g int, v int, w int, s text, d int, vc varchar(8), m bigint);
CREATE TABLE ec2_now (g int, name text, lim int, m bigint);
CREATE FUNCTION er_rand() RETURNS er LANGUAGE sql AS $$
    SELECT (1 + floor(random() * 6)::int,
            CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 40)::int - 5 END,
            CASE WHEN random() < 0.15 THEN NULL ELSE floor(random() * 20)::int - 5 END,
            CASE WHEN random() < 0.1 THEN NULL
                 ELSE (ARRAY['a', 'B', 'b', 'A', 'ab', 'Ab', 'é', 'e', 'Z', 'z'])[1 + floor(random() * 10)::int] END,
            CASE WHEN random() < 0.1 THEN NULL ELSE 1 + floor(random() * 30)::int END,
            CASE WHEN random() < 0.1 THEN NULL ELSE 'x' || floor(random() * 30)::int END)::er
$$;
-- one change of ec at time at (diff copies of r), kept in ec_now
CREATE PROCEDURE ec_put(r er, at bigint, diff bigint) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM peek.append('ec', ARRAY[r], at, diff);
    UPDATE ec_now n SET m = m + diff
     WHERE (n.g, n.v, n.w, n.s, n.d, n.vc) IS NOT DISTINCT FROM (r.g, r.v, r.w, r.s, r.d::int, r.vc);
    IF NOT FOUND THEN
        INSERT INTO ec_now VALUES (r.g, r.v, r.w, r.s, r.d, r.vc, diff);
    END IF;
    DELETE FROM ec_now WHERE m = 0;
END $$;
-- a random time's changes: inserts, retractions of random rows and of
-- groups' kept values (max and min of v, of s), updates that move rows,
-- a retraction before the insertion that outweighs it, copies
CREATE PROCEDURE ec_step(at bigint) LANGUAGE plpgsql AS $$
DECLARE
    r er;
    r2 er2;
    k int;
    c bigint;
BEGIN
    FOR i IN 1 .. floor(random() * 6)::int LOOP
        CALL ec_put(er_rand(), at, 1 + floor(random() * 3)::int);
    END LOOP;
    FOR i IN 1 .. floor(random() * 4)::int LOOP
        k := floor(random() * 5)::int;
        SELECT n.g, n.v, n.w, n.s, n.d, n.vc INTO r FROM ec_now n
         WHERE n.g = 1 + floor(random() * 6)::int
         ORDER BY CASE k WHEN 0 THEN n.v END DESC NULLS LAST,
                  CASE k WHEN 1 THEN n.v END ASC NULLS LAST,
                  CASE k WHEN 2 THEN n.s END DESC NULLS LAST,
                  CASE k WHEN 3 THEN n.w END DESC NULLS LAST,
                  random() LIMIT 1;
        CONTINUE WHEN r IS NULL;
        IF random() < 0.3 THEN
            -- all its copies
            SELECT m INTO c FROM ec_now n WHERE (n.g, n.v, n.w, n.s, n.d, n.vc)
                   IS NOT DISTINCT FROM (r.g, r.v, r.w, r.s, r.d::int, r.vc);
            CALL ec_put(r, at, -c);
        ELSE
            CALL ec_put(r, at, -1);
        END IF;
        IF random() < 0.4 THEN
            -- it moves (another group, another value)
            r.g := 1 + floor(random() * 6)::int;
            r.v := r.v + floor(random() * 7)::int - 3;
            CALL ec_put(r, at, 1);
        END IF;
    END LOOP;
    IF random() < 0.2 THEN
        -- retracted before it is inserted, at the same time
        r := er_rand();
        CALL ec_put(r, at, -1);
        CALL ec_put(r, at, 2);
    END IF;
    IF random() < 0.2 THEN
        k := 1 + floor(random() * 6)::int;
        IF EXISTS (SELECT FROM ec2_now WHERE g = k) THEN
            PERFORM peek.append('ec2', ARRAY(SELECT (g, name, lim)::er2 FROM ec2_now WHERE g = k), at, -1);
            DELETE FROM ec2_now WHERE g = k;
        END IF;
        IF random() < 0.8 THEN
            r2 := (k, (ARRAY['p', 'q', 'r'])[1 + floor(random() * 3)::int], floor(random() * 30)::int)::er2;
            PERFORM peek.append('ec2', ARRAY[r2], at, 1);
            INSERT INTO ec2_now VALUES (r2.g, r2.name, r2.lim, 1);
        END IF;
    END IF;
    PERFORM peek.advance('ec', at + 1);
    PERFORM peek.advance('ec2', at + 1);
END $$;

CREATE PROCEDURE ec_run(t0 bigint, t1 bigint, pause float8 DEFAULT 0.02) LANGUAGE plpgsql AS $$
BEGIN
    FOR t IN t0 .. t1 LOOP
        CALL ec_step(t);
        COMMIT;
        IF random() < 0.3 THEN
            PERFORM pg_sleep(pause);
        END IF;
    END LOOP;
END $$;
CREATE TABLE eq (name text PRIMARY KEY, query text);
INSERT INTO eq VALUES
 ('e_by', $$SELECT g, max(v) AS hi, min(v) AS lo, count(*) AS n, sum(v) AS sv, avg(w) AS aw,
                   bool_and(v > 0) AS pos, max(s) AS s_hi, min(s COLLATE "en-x-icu") AS s_lo_icu,
                   max(s COLLATE "en-x-icu") AS s_hi_icu, max(d) AS d_hi, min(vc) AS vc_lo, max(w) AS w_hi
              FROM peek.persist_peek(NULL::er, 'ec') GROUP BY g$$),
 ('e_filt', $$SELECT g, max(v) FILTER (WHERE w > 0) AS fhi, min(v) FILTER (WHERE w % 2 = 0) AS flo,
                     max(v + w) AS vw, max(coalesce(w, 0)) AS cw, max(v) FILTER (WHERE v IS NOT NULL) AS nn,
                     count(*) FILTER (WHERE v > 20) AS c20
                FROM peek.persist_peek(NULL::er, 'ec') GROUP BY g HAVING max(v) > 10$$),
 ('e_all', $$SELECT max(v) AS hi, min(v) AS lo, max(s) AS s_hi, min(d) AS d_lo, count(*) AS n
               FROM peek.persist_peek(NULL::er, 'ec')$$),
 ('e_expr', $$SELECT g % 3 AS k, max(v) AS hi, min(w) AS lo, max(s) AS s_hi
                FROM peek.persist_peek(NULL::er, 'ec') GROUP BY g % 3$$),
 ('e_text', $$SELECT g, max(v::text) AS vt, min(w::text) AS wt, max(d::int) AS di
                FROM peek.persist_peek(NULL::er, 'ec') GROUP BY g$$),
 ('e_union', $$SELECT g, max(v) AS m FROM peek.persist_peek(NULL::er, 'ec') GROUP BY g
               UNION ALL SELECT g, min(w) FROM peek.persist_peek(NULL::er, 'ec') WHERE v > 5 GROUP BY g$$),
 ('e_join_key', $$SELECT a.g, max(a.v) AS hi, min(b.lim) AS lim, count(*) AS n
                    FROM peek.persist_peek(NULL::er, 'ec') a JOIN peek.persist_peek(NULL::er2, 'ec2') b
                      ON a.g = b.g GROUP BY a.g$$),
 ('e_join_other', $$SELECT b.name, max(a.v) AS hi, min(a.s) AS s_lo, max(b.lim) AS lim
                      FROM peek.persist_peek(NULL::er, 'ec') a JOIN peek.persist_peek(NULL::er2, 'ec2') b
                        ON a.g = b.g GROUP BY b.name$$),
 ('e_left', $$SELECT a.g, max(b.lim) AS lim, max(a.v) AS hi
                FROM peek.persist_peek(NULL::er, 'ec') a LEFT JOIN peek.persist_peek(NULL::er2, 'ec2') b
                  ON a.g = b.g GROUP BY a.g$$),
 ('e_having', $$SELECT g FROM peek.persist_peek(NULL::er, 'ec') GROUP BY g HAVING max(v) - min(v) > 20$$),
 ('e_dom', $$SELECT d, max(v) AS hi, min(g) AS g_lo FROM peek.persist_peek(NULL::er, 'ec') GROUP BY d$$),
 ('e_vc', $$SELECT vc, max(s) AS s_hi, min(v) AS lo FROM peek.persist_peek(NULL::er, 'ec') GROUP BY vc$$),
 ('e_gs', $$SELECT g, s, max(v) AS hi, min(w) AS lo FROM peek.persist_peek(NULL::er, 'ec') GROUP BY g, s$$);

CREATE PROCEDURE ec_put_initial() LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 40 LOOP
        CALL ec_put(er_rand(), 0, 1);
    END LOOP;
    PERFORM peek.append('ec2', ARRAY[(1, 'p', 5), (2, 'q', 7), (3, 'p', 1), (5, 'r', 20)]::er2[], 0, 1);
    INSERT INTO ec2_now VALUES (1, 'p', 5, 1), (2, 'q', 7, 1), (3, 'p', 1, 1), (5, 'r', 20, 1);
    PERFORM peek.advance('ec', 1);
    PERFORM peek.advance('ec2', 1);
END $$;

SELECT setseed(0.47);
CALL ec_put_initial();
SELECT peek.create_view(name, query) FROM eq ORDER BY name;
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.views$$);
-- views over a view whose rows change
INSERT INTO eq VALUES
 ('e_vv', $$SELECT max(hi) AS top, min(lo) AS bottom, max(s_hi) AS s_top, count(*) AS n
             FROM peek.persist_peek(NULL::e_by, 'e_by')$$),
 ('e_vv2', $$SELECT pos, max(hi) AS top, min(s_hi) AS s_lo FROM peek.persist_peek(NULL::e_by, 'e_by') GROUP BY pos$$);
SELECT peek.create_view(name, query) FROM eq WHERE name IN ('e_vv', 'e_vv2') ORDER BY name;
SELECT peek.create_index('e_by_g', 'e_by', ARRAY['g']);
SELECT peek.create_index('e_filt_g', 'e_filt', ARRAY['g']);
SELECT peek.create_index('e_all_hi', 'e_all', ARRAY['hi']);
CALL ec_run(1, 50);
SELECT restart_maintenance();
CALL ec_run(51, 100);
SELECT wait_for($$SELECT bool_and(upper = 101) FROM peek.views$$);
SELECT name, state, bad_times FROM views_bad_times() JOIN peek.views USING (name) ORDER BY name;
SELECT i.name, view_mismatches(format('SELECT * FROM peek.index_peek(NULL::%I, %L, as_of => @T@)', v.name, i.name),
                               regexp_replace(v.query, '(''\w+''::text)', '\1, as_of => @T@', 'g'), 1, 100) AS bad_times
  FROM (VALUES ('e_by_g', 'e_by'), ('e_filt_g', 'e_filt'), ('e_all_hi', 'e_all')) i(name, view)
  JOIN peek.views v ON v.name = i.view ORDER BY i.name;
-- the workload did retract kept values (the oracle's own check)
SELECT count(*) > 0 AS kept_retracted FROM generate_series(1, 100) t
 WHERE (SELECT max(v) FROM peek.persist_peek(NULL::er, 'ec', as_of => t))
     < (SELECT max(v) FROM peek.persist_peek(NULL::er, 'ec', as_of => t - 1));
SELECT peek.drop_view(name) FROM peek.views WHERE name IN ('e_vv', 'e_vv2') ORDER BY name;
SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('ec');
SELECT peek.drop_collection('ec2');
DROP TABLE eq, ec_now, ec2_now;
DROP PROCEDURE ec_run(bigint, bigint, float8);
DROP PROCEDURE ec_step(bigint);
DROP PROCEDURE ec_put(er, bigint, bigint);
DROP PROCEDURE ec_put_initial();
DROP FUNCTION er_rand();
DROP TYPE er;
DROP TYPE er2;
DROP DOMAIN posint;

-- 2: rows whose count goes below zero
CREATE TYPE nr AS (g int, v int, n numeric);
SELECT peek.create_collection('nc', 'nr');
CREATE FUNCTION nc_put(at bigint, g int, v int, d bigint) RETURNS void LANGUAGE sql AS
$$SELECT peek.append('nc', ARRAY[(g, v, v::numeric)::nr], at, d)$$;
SELECT nc_put(0, 1, 10, 1), nc_put(0, 1, 5, 1), nc_put(0, 2, 7, 1), peek.advance('nc', 1);
CREATE TABLE nq (name text, query text);
INSERT INTO nq VALUES
 ('n_max', $$SELECT g, max(v) AS hi, min(v) AS lo FROM peek.persist_peek(NULL::nr, 'nc') GROUP BY g$$),
 ('n_num', $$SELECT g, max(n)::int AS hi, min(n)::int AS lo FROM peek.persist_peek(NULL::nr, 'nc') GROUP BY g$$),
 ('n_all', $$SELECT max(v) AS hi, min(v) AS lo FROM peek.persist_peek(NULL::nr, 'nc')$$),
 ('n_cnt', $$SELECT g, max(v) AS hi, count(*) AS c FROM peek.persist_peek(NULL::nr, 'nc') GROUP BY g$$);
SELECT peek.create_view(name, query) FROM nq ORDER BY name;
SELECT wait_for($$SELECT bool_and(upper = 1) FROM peek.views$$);
-- 1: the max's row retracted before it was ever inserted (-1); 2: back
-- to 0; 3: in (1); 4: 10^12 copies of it retracted, one of group 2's
-- rows below zero; a view hydrated then
SELECT nc_put(1, 1, 100, -1), peek.advance('nc', 2);
SELECT nc_put(2, 1, 100, 1), peek.advance('nc', 3);
SELECT nc_put(3, 1, 100, 1), peek.advance('nc', 4);
SELECT nc_put(4, 1, 100, -1000000000000), nc_put(4, 2, 7, -1), nc_put(4, 2, 3, 1), peek.advance('nc', 5);
SELECT wait_for($$SELECT bool_and(upper = 5) FROM peek.views$$);
INSERT INTO nq VALUES ('n_late', $$SELECT g, max(v) AS hi, min(v) AS lo FROM peek.persist_peek(NULL::nr, 'nc') GROUP BY g$$);
SELECT peek.create_view('n_late', query) FROM nq WHERE name = 'n_late';
-- 5: 10^12 copies back (1); 6: the other rows go; 7, 8, 9: group 2's 7
-- up, down below zero within a time, back
SELECT nc_put(5, 1, 100, 1000000000000), peek.advance('nc', 6);
SELECT nc_put(6, 1, 10, -1), peek.advance('nc', 7);
SELECT nc_put(7, 1, 100, -1), nc_put(7, 2, 7, 1), peek.advance('nc', 8);
SELECT nc_put(8, 2, 7, 1), nc_put(8, 2, 7, -3), nc_put(8, 2, 3, 2), peek.advance('nc', 9);
SELECT nc_put(9, 2, 7, 2), peek.advance('nc', 10);
SELECT wait_for($$SELECT bool_and(upper = 10) FROM peek.views$$);
SELECT name, state, failure FROM peek.views ORDER BY name;
-- where the input has a row below zero (times 1, 4, 8) the persist peek
-- fails; at the other times each view is its query
SELECT t, try(format('SELECT 1 FROM peek.persist_peek(NULL::nr, %L, as_of => %s)', 'nc', t)) AS peek
  FROM generate_series(0, 9) t ORDER BY t;
SELECT q.name, string_agg(t::text, ' ' ORDER BY t) AS bad_times
  FROM nq q JOIN peek.views v USING (name), generate_series(0, 9) t
 WHERE t >= v.since
   AND try(format('SELECT 1 FROM peek.persist_peek(NULL::nr, %L, as_of => %s)', 'nc', t)) = 'ok'
   AND view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', q.name, q.name),
                       replace(q.query, '''nc''', '''nc'', as_of => @T@'), ARRAY[t]) <> ''
 GROUP BY q.name ORDER BY q.name;
-- and at those times every view holds none of the row below zero, as the
-- query over the groups (n_num) and the hydration (n_late) do
SELECT t, (SELECT array_agg(x ORDER BY x) FROM peek.persist_peek(NULL::n_max, 'n_max', as_of => t) x)::text AS n_max,
       (SELECT array_agg(x ORDER BY x) FROM peek.persist_peek(NULL::n_num, 'n_num', as_of => t) x)::text AS n_num,
       (SELECT array_agg(x ORDER BY x) FROM peek.persist_peek(NULL::n_all, 'n_all', as_of => t) x)::text AS n_all,
       (SELECT array_agg(x ORDER BY x) FROM peek.persist_peek(NULL::n_cnt, 'n_cnt', as_of => t) x)::text AS n_cnt,
       CASE WHEN t >= 4 THEN (SELECT array_agg(x ORDER BY x) FROM peek.persist_peek(NULL::n_late, 'n_late', as_of => t) x)::text END AS n_late
  FROM unnest(ARRAY[1, 4, 8]) t ORDER BY t;
SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('nc');
DROP TABLE nq;
DROP FUNCTION nc_put(bigint, int, int, bigint);
DROP TYPE nr;

-- 3: 3,000 groups whose max and min(t) are retracted six times: the
-- forgotten states (bool_and's internal ones beside them) pass 4,096, the
-- states' memory is reset and every group computes its states again
CREATE TYPE mr AS (g int, v int, t text);
SELECT peek.create_collection('mc', 'mr');
SELECT peek.write('mc', array_agg((i % 3000, i, 't' || i)::mr)) FROM generate_series(1, 30000) i;
SELECT peek.create_view('m_by', $$SELECT g, max(v) AS hi, min(t) AS t_lo, bool_and(v > 5) AS b, sum(v)::bigint AS s
   FROM peek.persist_peek(NULL::mr, 'mc') GROUP BY g$$);
SELECT peek.create_view('m_by2', $$SELECT g, max(v) AS hi, max(t) AS t_hi, count(*) AS n
   FROM peek.persist_peek(NULL::mr, 'mc') GROUP BY g$$);
SELECT wait_for($$SELECT bool_and(state = 'ready' AND upper = 1) FROM peek.views$$);
CREATE PROCEDURE m_steps(n int) LANGUAGE plpgsql AS $$
DECLARE
    ins mr[];
    del mr[];
BEGIN
    FOR k IN 1 .. n LOOP
        CREATE TEMP TABLE cur ON COMMIT DROP AS SELECT * FROM peek.persist_peek(NULL::mr, 'mc');
        SELECT array_agg((g, v + 100000 * k, 'u' || v)::mr) INTO ins
          FROM (SELECT DISTINCT ON (g) * FROM cur ORDER BY g, t) lo WHERE g % 2 = 0;
        SELECT array_agg(x) INTO del
          FROM (SELECT (g, v, t)::mr x FROM (SELECT DISTINCT ON (g) * FROM cur ORDER BY g, v DESC) a
                UNION SELECT (g, v, t)::mr FROM (SELECT DISTINCT ON (g) * FROM cur ORDER BY g, t) b) y;
        PERFORM peek.write('mc', ins, del);
        COMMIT;
    END LOOP;
END $$;
CALL m_steps(6);
SELECT wait_for($$SELECT bool_and(upper = 7) FROM peek.views$$);
SELECT name, state, bad_times FROM views_bad_times() JOIN peek.views USING (name) ORDER BY name;
SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('mc');
DROP PROCEDURE m_steps(int);
DROP TYPE mr;
