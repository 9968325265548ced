-- local placeholder for another branch's migration of this number
DO $$ BEGIN END $$;
