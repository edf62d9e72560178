// Classifies SQL for the analysts' read-only endpoint: one statement, starting with a read keyword,
// no `INTO OUTFILE`, no table functions that reach outside the database (files, URLs, other servers,
// executables). The scan skips string literals, quoted identifiers and comments, so a keyword inside a
// string does not count.

const READ_KEYWORDS = new Set(['SELECT', 'WITH', 'SHOW', 'DESCRIBE', 'DESC', 'EXPLAIN', 'EXISTS']);

/** Table functions that read or write outside the engine's own tables. */
const EXTERNAL_TABLE_FUNCTIONS = new Set([
  'file',
  'filecluster',
  'url',
  'urlcluster',
  's3',
  's3cluster',
  'gcs',
  'hdfs',
  'hdfscluster',
  'azureblobstorage',
  'azureblobstoragecluster',
  'remote',
  'remotesecure',
  'cluster',
  'clusterallreplicas',
  'mysql',
  'postgresql',
  'mongodb',
  'redis',
  'sqlite',
  'jdbc',
  'odbc',
  'executable',
  'input',
  'deltalake',
  'iceberg',
  'hudi',
  'fuzzjson',
  'python',
  'loop',
]);

export type Classification = { ok: true; keyword: string } | { ok: false; reason: string };

interface Token {
  kind: 'word' | 'punct';
  text: string;
}

function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && sql[i + 1] === '-') {
      while (i < n && sql[i] !== '\n') i++;
    } else if (c === '#' && (sql[i + 1] === ' ' || sql[i + 1] === '!')) {
      while (i < n && sql[i] !== '\n') i++;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
    } else if (c === "'" || c === '"' || c === '`') {
      // quoted literal or identifier; backslash and doubled-quote escapes
      let j = i + 1;
      while (j < n) {
        if (sql[j] === '\\') j += 2;
        else if (sql[j] === c && sql[j + 1] === c) j += 2;
        else if (sql[j] === c) break;
        else j++;
      }
      out.push({ kind: 'word', text: c === "'" ? "'…'" : '"…"' });
      i = j + 1;
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$]/.test(sql[j])) j++;
      out.push({ kind: 'word', text: sql.slice(i, j) });
      i = j;
    } else {
      out.push({ kind: 'punct', text: c });
      i++;
    }
  }
  return out;
}

export function classifyReadOnly(sql: string): Classification {
  const tokens = tokenize(sql);
  // a trailing `;` is fine, anything after it is a second statement
  const semi = tokens.findIndex((t) => t.kind === 'punct' && t.text === ';');
  if (semi >= 0 && semi < tokens.length - 1) {
    return { ok: false, reason: 'Multi-statements are not allowed' };
  }
  const first = tokens.find((t) => !(t.kind === 'punct' && t.text === '('));
  if (!first) return { ok: false, reason: 'Empty query' };
  const keyword = first.text.toUpperCase();
  if (first.kind !== 'word' || !READ_KEYWORDS.has(keyword)) {
    return {
      ok: false,
      reason: `Cannot execute query in readonly mode: only SELECT, WITH, SHOW, DESCRIBE, EXPLAIN and EXISTS are allowed, got ${first.text}`,
    };
  }
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    if (t.kind !== 'word') continue;
    const up = t.text.toUpperCase();
    if (up === 'INTO' && tokens[k + 1]?.text.toUpperCase() === 'OUTFILE') {
      return { ok: false, reason: 'Cannot execute query in readonly mode: INTO OUTFILE is not allowed' };
    }
    if (EXTERNAL_TABLE_FUNCTIONS.has(t.text.toLowerCase()) && tokens[k + 1]?.text === '(') {
      // only as a table function: after FROM / JOIN or a comma in a FROM list
      const prev = tokens[k - 1]?.text.toUpperCase();
      if (prev === 'FROM' || prev === 'JOIN' || prev === ',' || prev === 'TABLE') {
        return {
          ok: false,
          reason: `Cannot execute query in readonly mode: table function ${t.text}() is not allowed`,
        };
      }
    }
  }
  return { ok: true, keyword };
}
