SET allow_experimental_object_type = 1; -- safe: PA401 ClickHouse SQL, not PostgreSQL: skipped with a notice
CREATE TABLE umami.website_event
(
    website_id UUID,
    created_at DateTime('UTC')
)
ENGINE = MergeTree
ORDER BY (website_id, created_at);
