-- 0016_sample_gpus_energy.sql — each card's own energy counter in a node-sample: the same column
-- and meaning as SQLite's migration 0019 (read its comment). Added to the partitioned table, so
-- every partition has it; NULL for the rows written before. IF NOT EXISTS: a schema taken back
-- to an older version by hand (the migration tests) keeps the column.
ALTER TABLE sample_gpus ADD COLUMN IF NOT EXISTS energy_mj bigint;
