// The Worker's one compatibility date, read from wrangler.toml: what
// `make deploy` and `make dev` run is what the tests (tests/support/worker.mjs),
// the demo and the bench run. Plain Node, no dependencies.
import { readFileSync } from "node:fs";

const toml = readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8");
const found = toml.match(/^compatibility_date\s*=\s*"(\d{4}-\d{2}-\d{2})"/m);
if (!found) throw new Error("wrangler.toml has no compatibility_date = \"YYYY-MM-DD\"");

export const COMPAT_DATE = found[1];
