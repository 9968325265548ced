-- 0015_slurm_alloc_gpus.sql — the GPU cards a Slurm job holds, read from its TRES text.
--
-- Usage per user and account (GET /api/v1/usage) and every job's gpu_eff (GET /api/v1/jobs) divide
-- the GPU use by the cards allocated, which Slurm gives only inside a TRES text: AllocTRES
-- (allocated_resources) or else ReqTRES (requested_resources), such as
-- "billing=20,cpu=20,gres/gpu:a100=2,gres/gpu=2,mem=50G,node=1". A generated column, so no writer
-- changes; the same rule as SQLite's 0018: the untyped gres/gpu=N when present, else the first
-- typed gres/gpu:TYPE=N, else 0 for a job whose TRES is known and names no GPU; NULL when neither
-- text is known.
ALTER TABLE slurm_jobs_current ADD COLUMN alloc_gpus bigint GENERATED ALWAYS AS (
    CASE
    WHEN coalesce(allocated_resources, requested_resources) IS NULL THEN NULL
    ELSE coalesce(substring(',' || coalesce(allocated_resources, requested_resources) FROM ',gres/gpu=([0-9]+)')::bigint,
                  substring(',' || coalesce(allocated_resources, requested_resources) FROM ',gres/gpu:[^=,]*=([0-9]+)')::bigint,
                  0)
    END) STORED;
