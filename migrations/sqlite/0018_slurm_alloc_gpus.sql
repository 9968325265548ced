-- 0018_slurm_alloc_gpus.sql — the GPU cards a Slurm job holds, read from its TRES text.
--
-- Usage per user and account (GET /api/v1/usage) and every job's gpu_eff (GET /api/v1/jobs) divide
-- the GPU use by the cards allocated, which Slurm gives only inside a TRES text: AllocTRES
-- (allocated_resources, what the job got once it ran) or else ReqTRES (requested_resources), such
-- as "billing=20,cpu=20,gres/gpu:a100=2,gres/gpu=2,mem=50G,node=1". The job list filters and sorts
-- by gpu_eff in SQL, so the count is a column: generated (computed when read, nothing stored, no
-- writer changed), the same rule as PostgreSQL's 0015. The untyped gres/gpu=N when present (Slurm
-- lists it beside the typed ones), else the first typed gres/gpu:TYPE=N, else 0 for a job whose
-- TRES is known and names no GPU; NULL when neither text is known (no allocation known).
ALTER TABLE slurm_jobs_current ADD COLUMN alloc_gpus INTEGER GENERATED ALWAYS AS (
    CASE
    WHEN coalesce(allocated_resources, requested_resources) IS NULL THEN NULL
    WHEN instr(',' || coalesce(allocated_resources, requested_resources), ',gres/gpu=') > 0
    THEN CAST(substr(',' || coalesce(allocated_resources, requested_resources),
                     instr(',' || coalesce(allocated_resources, requested_resources), ',gres/gpu=') + 10) AS INTEGER)
    WHEN instr(',' || coalesce(allocated_resources, requested_resources), ',gres/gpu:') > 0
    THEN CAST(substr(substr(',' || coalesce(allocated_resources, requested_resources),
                            instr(',' || coalesce(allocated_resources, requested_resources), ',gres/gpu:')),
                     instr(substr(',' || coalesce(allocated_resources, requested_resources),
                                  instr(',' || coalesce(allocated_resources, requested_resources), ',gres/gpu:')),
                           '=') + 1) AS INTEGER)
    ELSE 0
    END) VIRTUAL;
