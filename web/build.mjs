// Builds the dashboard into dist/ (committed; CMake embeds it into fjord):
//   dist/index.html                 the page, naming the hashed bundle
//   dist/assets/app-HASH.js|.css    the bundle (esbuild, minified; names change with the content)
//   dist/licenses.txt               the licence notices of the third-party code in the bundle
// The output depends only on the sources and the locked packages, so a rebuild from the lockfile
// gives the same bytes (scripts/test.sh checks that; docs/dashboard.md).
// `node build.mjs --tests` instead bundles test/*.test.ts for node's test runner into build-test/.
// `--outdir DIR` writes to DIR instead of dist/ (or build-test/): the check that a rebuild gives the
// committed bytes builds beside them and compares.
import * as esbuild from "esbuild";
import { readFileSync, writeFileSync, rmSync, mkdirSync, readdirSync, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outArg = process.argv.indexOf("--outdir");
const outdir = outArg > 0 ? resolve(process.argv[outArg + 1]) : null;
const common = {
  bundle: true,
  jsx: "automatic",
  jsxImportSource: "preact",
  target: "es2020",
  logLevel: "warning",
  absWorkingDir: here,
};

if (process.argv.includes("--tests")) {
  const out = outdir ?? join(here, "build-test");
  rmSync(out, { recursive: true, force: true });
  const tests = readdirSync(join(here, "test")).filter((f) => f.endsWith(".test.ts"));
  await esbuild.build({
    ...common,
    entryPoints: tests.map((f) => join("test", f)),
    outdir: out,
    outExtension: { ".js": ".mjs" },
    platform: "node",
    format: "esm",
    external: ["node:*"],
  });
  process.exit(0);
}

const dist = outdir ?? join(here, "dist");
rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, "assets"), { recursive: true });
const result = await esbuild.build({
  ...common,
  entryPoints: { app: "src/main.tsx" },
  outdir: join(dist, "assets"),
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  format: "esm",
  minify: true,
  legalComments: "none", // the notices go to licenses.txt, whole
  metafile: true,
  charset: "utf8",
});

const outputs = Object.keys(result.metafile.outputs).map((p) => p.replace(/^.*\/assets\//, ""));
const js = outputs.find((p) => p.endsWith(".js"));
const css = outputs.find((p) => p.endsWith(".css"));
writeFileSync(
  join(dist, "index.html"),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>fjord</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/assets/${css}">
<script type="module" src="/ui/assets/${js}"></script>
</head>
<body>
<div id="app"><noscript>The fjord dashboard needs JavaScript.</noscript></div>
</body>
</html>
`,
);

// Licence notices: every npm package whose code went into the bundle, with its LICENSE file.
const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (m) packages.add(m[1]);
}
let notices =
  "The fjord dashboard's bundle (assets/app-*.js, app-*.css) contains the following third-party code.\n";
for (const name of [...packages].sort()) {
  const dir = join(here, "node_modules", name);
  const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const file = readdirSync(dir).find((f) => /^licen[cs]e(\.md|\.txt)?$/i.test(f));
  if (!file || !existsSync(join(dir, file))) throw new Error(`no licence file in ${name}`);
  notices += `\n==== ${name} ${meta.version} (${meta.license}) ====\n\n${readFileSync(join(dir, file), "utf8").trim()}\n`;
}
writeFileSync(join(dist, "licenses.txt"), notices);
console.log(`dist: ${js}, ${css}, licenses of ${[...packages].sort().join(", ")}`);
