-- 0019_sample_gpus_energy.sql — each card's own energy counter in a node-sample.
--
-- fjord-push sends, beside a card's power, the card's energy counter where the driver has one
-- (NVML's total energy consumption: millijoules since the driver loaded; `energy_mj` in a sample's
-- gpus). Job energy prefers the counter's difference to the integrated power (docs/energy.md).
-- NULL for every row written before and for producers without it (Sonar): nothing to backfill.
ALTER TABLE sample_gpus ADD COLUMN energy_mj INTEGER;
