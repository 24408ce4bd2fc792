SET statement_timeout = 0; -- safe: PA401 pg_dump preamble of a schema dump
SET lock_timeout = 0; -- safe: PA401 pg_dump preamble
SET idle_in_transaction_session_timeout = 0; -- safe: PA401 pg_dump preamble
SET client_encoding = 'UTF8'; -- safe: PA401 pg_dump preamble
SET standard_conforming_strings = on; -- safe: PA401 pg_dump preamble
SELECT pg_catalog.set_config('search_path', '', false); -- safe: PA401 pg_dump preamble
SET check_function_bodies = false; -- safe: PA401 pg_dump preamble
SET xmloption = content; -- safe: PA401 pg_dump preamble
SET client_min_messages = warning; -- safe: PA401 pg_dump preamble
SET row_security = off; -- safe: PA401 pg_dump preamble

CREATE EXTENSION IF NOT EXISTS hstore WITH SCHEMA public;

SET default_tablespace = ''; -- safe: PA401 pg_dump between tables

SET default_table_access_method = heap; -- safe: PA401 pg_dump between tables

CREATE TABLE public.rubygems (
    id integer NOT NULL,
    name character varying(255),
    created_at timestamp without time zone
);

CREATE TABLE public.versions (
    id integer NOT NULL,
    rubygem_id integer,
    number character varying(255)
);

SET search_path TO "$user", public; -- safe: PA401 Rails appends it to the dump

INSERT INTO "schema_migrations" (version) VALUES
('20240101000000');
