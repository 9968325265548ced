-- local placeholder for another branch's migration of this number
SELECT 1;
