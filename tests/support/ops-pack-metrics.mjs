// What tests/ops-pack.test.mjs needs to check the ops pack (Prometheus alert
// rules, Grafana dashboard) against the agent: the metric names the agent
// really exports, the metric selectors a PromQL expression uses, Prometheus'
// duration syntax, and a reader for the YAML the rules file is written in.
//
// Layout: parseYamlSubset (the rules file), parseDuration (`for:`),
// metricSelectors (PromQL), exportedMetrics (the agent's GET /metrics, or
// its source when the binary is not built).
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

// ---------------------------------------------------------------------------
// YAML, a strict subset.
//
// There is no YAML parser in node_modules and the ops pack must not add a
// dependency. The rules file stays in ordinary block YAML (what promtool,
// operators and every other rules file use, with comments) and this reads
// only the subset it uses: block mappings, block sequences indented under
// their key, `- key: value` items, one-line plain / 'single' / "double"
// scalars, and `|`, `|-`, `>`, `>-` block scalars. Everything else (flow
// collections, anchors, tags, multi-line plain scalars, duplicate keys,
// tabs, words YAML would read as booleans, numbers or null) is an error
// naming the line, never a guess: a reader that silently misreads the file
// would make every check after it worthless.

const KEY = /^([A-Za-z_][A-Za-z0-9_.-]*):(?=\s|$)/;
// Go's yaml.v2 (YAML 1.1, what Prometheus uses) reads these as booleans or
// null; a rules file that means the string must quote it.
const NOT_A_STRING = /^(~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N)$/;
const NUMBER = /^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$|^0x[0-9a-fA-F_]+$|^0o?[0-7_]+$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$/;

export function parseYamlSubset(text, name = "yaml") {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  const fail = (index, message) => {
    throw new Error(`${name}:${index + 1}: ${message}`);
  };
  lines.forEach((line, index) => {
    if (line.includes("\t")) fail(index, "a tab; indent with spaces");
    if (/^(---|\.\.\.|%)/.test(line)) fail(index, "document markers and directives are outside the subset");
  });
  const indent = (index) => lines[index].length - lines[index].trimStart().length;
  const significant = (from) => {
    for (let index = from; index < lines.length; index++) {
      const content = lines[index].trim();
      if (content !== "" && !content.startsWith("#")) return index;
    }
    return -1;
  };
  let next = 0; // the first line not consumed yet

  function block(column) {
    const index = significant(next);
    const content = lines[index].slice(column);
    return content === "-" || content.startsWith("- ") ? sequence(column) : mapping(column);
  }

  function mapping(column) {
    const out = {};
    for (;;) {
      const index = significant(next);
      if (index < 0 || indent(index) < column) return out;
      if (indent(index) > column) fail(index, "unexpected indentation");
      const content = lines[index].slice(column);
      if (content === "-" || content.startsWith("- ")) fail(index, "a sequence item where a key was expected");
      const key = KEY.exec(content);
      if (!key) fail(index, `expected "key: value", got ${JSON.stringify(content)}`);
      if (key[1] === "__proto__") fail(index, "the key __proto__");
      if (Object.hasOwn(out, key[1])) fail(index, `duplicate key ${JSON.stringify(key[1])}`);
      next = index + 1;
      out[key[1]] = value(content.slice(key[0].length).trim(), column, index);
    }
  }

  function sequence(column) {
    const out = [];
    for (;;) {
      const index = significant(next);
      if (index < 0 || indent(index) < column) return out;
      if (indent(index) > column) fail(index, "unexpected indentation");
      const content = lines[index].slice(column);
      if (!(content === "-" || content.startsWith("- "))) fail(index, "expected a sequence item (\"- \")");
      const rest = content.slice(1).trimStart();
      if (rest === "" || rest.startsWith("#")) {
        next = index + 1;
        out.push(nested(column, index));
      } else if (KEY.test(rest)) {
        // "- key: value": a mapping whose keys sit where this key does.
        const keyColumn = lines[index].length - rest.length;
        lines[index] = " ".repeat(keyColumn) + rest;
        next = index;
        out.push(mapping(keyColumn));
      } else {
        next = index + 1;
        out.push(scalar(rest, index));
      }
    }
  }

  function nested(column, index) {
    const child = significant(next);
    if (child < 0 || indent(child) <= column) {
      fail(index, "no value (indent a nested block under its key; an empty value would be null)");
    }
    return block(indent(child));
  }

  function value(rest, column, index) {
    if (rest === "" || rest.startsWith("#")) return nested(column, index);
    const header = /^([|>])(-?)(\s+#.*)?$/.exec(rest);
    if (header) return blockScalar(header[1], header[2] === "-", column, index);
    return scalar(rest, index);
  }

  function blockScalar(style, strip, column, index) {
    const body = [];
    let contentIndent = -1;
    while (next < lines.length) {
      const line = lines[next];
      if (line.trim() === "") {
        body.push(line.length > contentIndent && contentIndent >= 0 ? line.slice(contentIndent) : "");
        next++;
        continue;
      }
      if (contentIndent < 0) {
        if (indent(next) <= column) break;
        contentIndent = indent(next);
        if (body.length > 0) fail(index, "leading blank lines in a block scalar are outside the subset");
      } else if (indent(next) < contentIndent) {
        break;
      }
      body.push(line.slice(contentIndent));
      next++;
    }
    if (contentIndent < 0) fail(index, "an empty block scalar");
    // Trailing blank lines belong to the chomping, not the content.
    while (body.length > 0 && body[body.length - 1] === "") body.pop();
    let text;
    if (style === "|") {
      text = body.join("\n");
    } else {
      text = "";
      let blanks = 0;
      body.forEach((line, offset) => {
        if (line === "") {
          blanks++;
          return;
        }
        if (line.startsWith(" ")) {
          fail(index, "a more-indented line in a folded scalar is outside the subset; use |");
        }
        if (offset > 0) text += blanks > 0 ? "\n".repeat(blanks) : " ";
        text += line;
        blanks = 0;
      });
    }
    return strip ? text : `${text}\n`;
  }

  function scalar(rest, index) {
    if (rest.startsWith('"') || rest.startsWith("'")) return quoted(rest, index);
    if (/^[[\]{}&*!%@`|>?:,-]/.test(rest) && !/^-[^\s]/.test(rest)) {
      fail(index, `${JSON.stringify(rest)} starts with a YAML indicator; quote it`);
    }
    const text = rest.replace(/\s+#.*$/, "").trimEnd();
    if (/:(\s|$)/.test(text)) fail(index, `${JSON.stringify(text)} holds ": "; quote it`);
    if (NOT_A_STRING.test(text) || NUMBER.test(text)) {
      fail(index, `${JSON.stringify(text)} would not be read as a string; quote it`);
    }
    return text;
  }

  function quoted(rest, index) {
    const quote = rest[0];
    let end = 1;
    while (end < rest.length) {
      if (quote === '"' && rest[end] === "\\") end += 2;
      else if (quote === "'" && rest[end] === "'" && rest[end + 1] === "'") end += 2;
      else if (rest[end] === quote) break;
      else end++;
    }
    if (end >= rest.length) fail(index, "a quoted scalar must end on its line");
    const after = rest.slice(end + 1).trim();
    if (after !== "" && !after.startsWith("#")) fail(index, `text after the closing quote: ${JSON.stringify(after)}`);
    const inner = rest.slice(1, end);
    if (quote === "'") return inner.replace(/''/g, "'");
    try {
      // YAML's double-quoted escapes that JSON shares; the others (\x, \e,
      // \N, ...) are outside the subset and fail here.
      return JSON.parse(`"${inner}"`);
    } catch {
      return fail(index, `an escape outside the subset in ${rest.slice(0, end + 1)}`);
    }
  }

  const first = significant(0);
  if (first < 0) fail(0, "an empty document");
  if (indent(first) !== 0) fail(first, "the document must start at column 0");
  const document = block(0);
  const left = significant(next);
  if (left >= 0) fail(left, "unexpected indentation");
  return document;
}

// ---------------------------------------------------------------------------
// Prometheus durations (`for:`, `[5m]`), as model.ParseDuration reads them:
// units largest first, each at most once, no spaces or fractions.

const DURATION = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const UNIT_MS = [365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1_000, 1];

/** Milliseconds, or `null` if Prometheus would reject the text. */
export function parseDuration(text) {
  if (typeof text !== "string") return null;
  if (text === "0") return 0;
  const match = DURATION.exec(text);
  if (text === "" || !match) return null;
  return UNIT_MS.reduce((sum, unit, i) => sum + (match[i + 1] ? Number(match[i + 1]) * unit : 0), 0);
}

// ---------------------------------------------------------------------------
// PromQL: the metric selectors of an expression.
//
// Not a PromQL parser: a lexer that knows enough to tell a metric name from
// everything else that looks like an identifier. Skipped: strings, label
// matchers `{...}` (parsed, and returned with their metric), ranges and
// subqueries `[...]`, numbers and durations, label lists after by / without
// / on / ignoring / group_left / group_right, keywords, and names called
// like functions. A name followed by "(" that is no PromQL function, a `$`
// outside a string or range, a selector without a metric name, or
// unbalanced brackets is an error rather than a guess.

export const PROMQL_AGGREGATIONS = new Set([
  "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
  "bottomk", "topk", "quantile", "limitk", "limit_ratio",
]);

export const PROMQL_FUNCTIONS = new Set([
  "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
  "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
  "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
  "delta", "deriv", "double_exponential_smoothing", "end", "exp", "floor", "histogram_avg",
  "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
  "histogram_stdvar", "histogram_sum", "holt_winters", "hour", "idelta", "increase", "info",
  "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
  "mad_over_time", "max_over_time", "min_over_time", "minute", "month", "pi",
  "predict_linear", "present_over_time", "quantile_over_time", "rad", "rate", "resets",
  "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc",
  "sort_desc", "sqrt", "start", "stddev_over_time", "stdvar_over_time", "sum_over_time",
  "tan", "tanh", "time", "timestamp", "vector", "year",
]);

// Case-insensitive in PromQL.
const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"]);
const LABEL_LISTS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);

/**
 * The metric selectors in `expr`, in order: `{ name, matchers: [{ label, op,
 * value }] }`. Throws on anything it does not understand.
 */
export function metricSelectors(expr) {
  const selectors = [];
  let pending = null; // the last metric name, until its `{...}` or anything else
  let depth = 0;
  let i = 0;
  const fail = (message) => {
    throw new Error(`${message} at offset ${i} of ${JSON.stringify(expr)}`);
  };
  const skipString = () => {
    const quote = expr[i++];
    while (i < expr.length && expr[i] !== quote) i += quote !== "`" && expr[i] === "\\" ? 2 : 1;
    if (i >= expr.length) fail("an unterminated string");
    i++;
  };
  const skipSpace = () => {
    while (i < expr.length && /\s/.test(expr[i])) i++;
  };
  while (i < expr.length) {
    const c = expr[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === "#") {
      while (i < expr.length && expr[i] !== "\n") i++;
    } else if (c === '"' || c === "'" || c === "`") {
      skipString();
      pending = null;
    } else if (c === "{") {
      const start = ++i;
      while (i < expr.length && expr[i] !== "}") {
        if (expr[i] === '"' || expr[i] === "'" || expr[i] === "`") skipString();
        else i++;
      }
      if (i >= expr.length) fail("an unterminated label matcher");
      const matchers = parseMatchers(expr.slice(start, i), fail);
      i++;
      if (!pending) fail("a selector without a metric name");
      pending.matchers = matchers;
      pending = null;
    } else if (c === "[") {
      while (i < expr.length && expr[i] !== "]") i++;
      if (i >= expr.length) fail("an unterminated range");
      i++;
      pending = null;
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(expr[i + 1] ?? ""))) {
      while (i < expr.length && /[0-9A-Za-z_.]/.test(expr[i])) i++;
      pending = null;
    } else if (/[A-Za-z_:]/.test(c)) {
      const start = i;
      while (i < expr.length && /[A-Za-z0-9_:]/.test(expr[i])) i++;
      const word = expr.slice(start, i);
      const lower = word.toLowerCase();
      skipSpace();
      const called = expr[i] === "(";
      pending = null;
      if (LABEL_LISTS.has(lower)) {
        if (called) {
          while (i < expr.length && expr[i] !== ")") i++;
          if (i >= expr.length) fail(`an unterminated ${word} (...) list`);
          i++;
        } else if (lower !== "group_left" && lower !== "group_right") {
          fail(`${word} without a label list`);
        }
      } else if (KEYWORDS.has(lower)) {
        // `and (`, `or (`: a binary operator before a parenthesis.
      } else if (called) {
        if (!PROMQL_FUNCTIONS.has(word) && !PROMQL_AGGREGATIONS.has(word)) fail(`${word}() is no PromQL function`);
      } else if (!PROMQL_AGGREGATIONS.has(word)) {
        pending = { name: word, matchers: [] };
        selectors.push(pending);
      }
    } else if (c === "$") {
      fail("a variable outside a label value or range");
    } else {
      if (c === "(") depth++;
      if (c === ")" && --depth < 0) fail("an unbalanced )");
      if (c === "]" || c === "}") fail(`an unbalanced ${c}`);
      pending = null;
      i++;
    }
  }
  if (depth !== 0) fail("an unbalanced (");
  return selectors;
}

function parseMatchers(text, fail) {
  const matchers = [];
  const one = /\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*(,|$)/y;
  let at = 0;
  while (at < text.length && text.slice(at).trim() !== "") {
    one.lastIndex = at;
    const m = one.exec(text);
    if (!m) fail(`a label matcher PromQL would not accept: {${text}}`);
    if (m[1] === "__name__") fail("a __name__ matcher (name the metric instead)");
    const raw = m[3];
    const value = raw[0] === '"' ? JSON.parse(raw) : raw.slice(1, -1);
    matchers.push({ label: m[1], op: m[2], value });
    at = one.lastIndex;
  }
  return matchers;
}

// ---------------------------------------------------------------------------
// The metrics the agent exports.

/**
 * `{ names, labels, source }`: the metric names (from # HELP, # TYPE and
 * sample lines) and the label names on its samples, read from the real
 * agent's GET /metrics when `<target>/debug/failover-agent` is built;
 * otherwise the names from the string literals of
 * crates/failover-agent/src/metrics.rs, and `labels` null.
 */
export async function exportedMetrics(root) {
  const target = process.env.CARGO_TARGET_DIR ?? join(root, "target");
  const binary = join(target, "debug", "failover-agent");
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    const file = join(root, "crates", "failover-agent", "src", "metrics.rs");
    return {
      names: namesInSource(readFileSync(file, "utf8")),
      labels: null,
      source: `${binary} is not built: names from the string literals in crates/failover-agent/src/metrics.rs`,
    };
  }
  const text = await scrapeAgent(binary);
  return { ...parseExposition(text), source: `GET /metrics of a running ${binary}` };
}

/** Every `failover_agent_*` name inside a string literal of Rust source. */
export function namesInSource(source) {
  const names = new Set();
  const code = source.replace(/^\s*\/\/.*$/gm, "");
  // An escape may be a backslash before a line break: Rust's continuation.
  for (const literal of code.matchAll(/"((?:[^"\\]|\\[\s\S])*)"/g)) {
    for (const name of literal[1].matchAll(/failover_agent_[A-Za-z0-9_:]*[A-Za-z0-9:]/g)) names.add(name[0]);
  }
  return names;
}

/** Prometheus text exposition: metric names and the label names on samples. */
export function parseExposition(text) {
  const names = new Set();
  const labels = new Set();
  for (const line of text.split("\n")) {
    const meta = /^#\s+(HELP|TYPE)\s+([A-Za-z_:][A-Za-z0-9_:]*)/.exec(line);
    if (meta) {
      names.add(meta[2]);
      continue;
    }
    if (line.trim() === "" || line.startsWith("#")) continue;
    const sample = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+\S+/.exec(line);
    if (!sample) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    names.add(sample[1]);
    for (const pair of (sample[3] ?? "").matchAll(/([A-Za-z_][A-Za-z0-9_]*)="(?:[^"\\]|\\.)*"/g)) labels.add(pair[1]);
  }
  return { names, labels };
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts the agent as a primary of a shared tunnel whose connector, peer and
 * egress are all a closed port: it never starts anything (`status` says
 * stopped, egress never proves good) and `start`/`stop` are no-ops anyway.
 * Returns the text of one GET /metrics; the agent is killed whatever happens.
 */
async function scrapeAgent(binary) {
  // Not under /tmp or /home, where the agent refuses a maintenance flag.
  const dir = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "ops-pack-agent-"));
  try {
    for (let attempt = 1; ; attempt++) {
      const [port, closed] = [await freePort(), await freePort()];
      // Owner-only and at least 16 characters, or the agent refuses it.
      writeFileSync(join(dir, "token"), "ops-pack-token-for-tests\n", { mode: 0o600 });
      writeFileSync(
        join(dir, "agent.toml"),
        `role = "primary"
listen = "127.0.0.1:${port}"
token_file = "${join(dir, "token")}"
maintenance_flag = "${join(dir, "maintenance")}"
poll_interval = "1s"
failback_interval = "1s"
probe_timeout = "500ms"

[connector]
ready_url = "http://127.0.0.1:${closed}/ready"
control = "command"
start_command = "true"
stop_command = "true"
status_command = "false"
command_timeout = "5s"

[peer]
agent_url = "http://127.0.0.1:${closed}"

[egress]
url = "http://127.0.0.1:${closed}/cdn-cgi/trace"
`,
      );
      const result = await scrapeOnce(binary, join(dir, "agent.toml"), port);
      if (result.text !== undefined) return result.text;
      // Another process took the port between freePort() and the bind.
      if (attempt < 3 && /cannot listen/.test(result.log)) continue;
      throw new Error(`the agent gave no /metrics: ${result.why}\n----- agent log -----\n${result.log}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function scrapeOnce(binary, config, port) {
  // Not under systemd: no readiness socket, no watchdog to fit in.
  const env = { ...process.env };
  for (const key of ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"]) delete env[key];
  const child = spawn(binary, ["--config", config, "run"], { env, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.on("data", (chunk) => (log += chunk));
  let exited = null;
  const exit = new Promise((resolve) => child.on("exit", (code, signal) => resolve((exited = { code, signal }))));
  try {
    const deadline = Date.now() + 15_000;
    let why = "no answer within 15 s";
    while (Date.now() < deadline && !exited) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2_000) });
        const text = await res.text();
        if (res.status === 200) return { text, log };
        why = `status ${res.status}`;
      } catch {
        // Not listening yet.
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (exited) why = `it exited (code ${exited.code}, signal ${exited.signal})`;
    return { why, log };
  } finally {
    if (!exited) {
      child.kill("SIGTERM");
      const late = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exit;
      clearTimeout(late);
    }
  }
}
