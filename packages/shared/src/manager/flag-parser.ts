/**
 * pflag-style command-line parsing, table-driven by FlagSpecs.
 *
 * Syntax (as pflag): `--flag=value`, `--flag value`, bare `--bool` (true), `--bool=false`, `-h`,
 * `--help`, and `--` ending the flags. A repeated flag overrides the earlier value, except a
 * stringList, whose repeats append (`--controllers=a --controllers=b` is `a,b`).
 */
import { DurationError, formatDuration, parseDuration } from './duration.js';

export type FlagType = 'string' | 'int' | 'float' | 'bool' | 'duration' | 'stringList';
/** string → string, int/float → number, bool → boolean, duration → number (ms), stringList → string[]. */
export type FlagValue = string | number | boolean | string[];

export interface FlagSpec {
  /** Without dashes: 'kube-api-qps'. */
  name: string;
  type: FlagType;
  /** Of the type's FlagValue (durations in milliseconds). */
  default: FlagValue;
  help: string;
  /** Returns a reason when the (parsed) value is unacceptable; the default is not validated. */
  validate?: (v: FlagValue) => string | undefined;
  /** A duration flag whose negative values mean something (its help says what); others refuse them. */
  allowNegative?: boolean;
}

/** A bad command line: the manager prints the (one-line) message and exits 2. */
export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

export interface ParsedFlags {
  /** Every spec's value by flag name: the default unless the command line set it. */
  values: Record<string, FlagValue>;
  /** --help or -h was given. */
  help: boolean;
  /** Non-flag arguments, and everything after `--`. */
  positional: string[];
}

/** Go's strconv.ParseBool spellings. */
const TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

function parseBool(raw: string): boolean | undefined {
  return TRUE.has(raw) ? true : FALSE.has(raw) ? false : undefined;
}

/** Parses one raw command-line value according to the spec's type (no validate). */
function parseValue(spec: FlagSpec, raw: string): FlagValue {
  const bad = (why: string): FlagError => new FlagError(`invalid value "${raw}" for flag --${spec.name}: ${why}`);
  switch (spec.type) {
    case 'string':
      return raw;
    case 'bool': {
      const b = parseBool(raw);
      if (b === undefined) throw bad('not a boolean (use true or false)');
      return b;
    }
    case 'int': {
      if (!/^[+-]?\d+$/.test(raw)) throw bad('not an integer');
      const n = Number(raw);
      if (!Number.isSafeInteger(n)) throw bad('integer out of range');
      return n;
    }
    case 'float': {
      if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) throw bad('not a number');
      const n = Number(raw);
      if (!Number.isFinite(n)) throw bad('number out of range');
      return n;
    }
    case 'duration':
      try {
        return parseDuration(raw, { allowNegative: spec.allowNegative === true });
      } catch (err) {
        if (err instanceof DurationError) throw bad(`not a duration: ${err.reason} (examples: 500ms, 15s, 1m30s)`);
        throw err;
      }
    case 'stringList':
      return raw
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
  }
}

function defaultMatchesType(spec: FlagSpec): boolean {
  switch (spec.type) {
    case 'string':
      return typeof spec.default === 'string';
    case 'bool':
      return typeof spec.default === 'boolean';
    case 'int':
      return Number.isSafeInteger(spec.default);
    case 'float':
    case 'duration':
      return typeof spec.default === 'number' && !Number.isNaN(spec.default);
    case 'stringList':
      return Array.isArray(spec.default) && spec.default.every((x) => typeof x === 'string');
  }
}

/** Programming errors in a flag table (not the user's fault, so a plain Error, not a FlagError). */
function checkSpecs(specs: readonly FlagSpec[]): Map<string, FlagSpec> {
  const byName = new Map<string, FlagSpec>();
  for (const spec of specs) {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(spec.name)) throw new Error(`flag table: bad flag name "${spec.name}"`);
    if (spec.name === 'help' || spec.name === 'h') throw new Error(`flag table: --${spec.name} is reserved`);
    if (byName.has(spec.name)) throw new Error(`flag table: --${spec.name} is defined twice`);
    if (!defaultMatchesType(spec)) throw new Error(`flag table: default of --${spec.name} does not match its type ${spec.type}`);
    byName.set(spec.name, spec);
  }
  return byName;
}

function copyValue(v: FlagValue): FlagValue {
  return Array.isArray(v) ? [...v] : v;
}

/**
 * Parses argv (without the node and script paths) against the specs. Throws a FlagError with a
 * one-line message naming the flag on an unknown flag, a missing value or a bad value.
 */
export function parseFlags(specs: readonly FlagSpec[], argv: readonly string[]): ParsedFlags {
  const byName = checkSpecs(specs);
  const values: Record<string, FlagValue> = Object.fromEntries(specs.map((s) => [s.name, copyValue(s.default)]));
  const seen = new Set<string>();
  const positional: string[] = [];
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positional.push(arg);
      continue;
    }
    if (!arg.startsWith('--')) {
      // Shorthands: only -h exists.
      if (arg === '-h') {
        help = true;
        continue;
      }
      const long = arg.slice(1).split('=')[0]!;
      const hint = byName.has(long) || long === 'help' ? ` (did you mean --${long}?)` : '';
      throw new FlagError(`unknown shorthand flag: '${arg[1]!}' in ${arg}${hint}`);
    }
    const body = arg.slice(2);
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    if (name === '' || name.startsWith('-')) throw new FlagError(`bad flag syntax: ${arg}`);
    const inline = eq < 0 ? undefined : body.slice(eq + 1);
    if (name === 'help') {
      if (inline === undefined) help = true;
      else {
        const b = parseBool(inline);
        if (b === undefined) throw new FlagError(`invalid value "${inline}" for flag --help: not a boolean (use true or false)`);
        help = b;
      }
      continue;
    }
    const spec = byName.get(name);
    if (!spec) throw new FlagError(`unknown flag: --${name}`);
    let raw: string;
    if (inline !== undefined) raw = inline;
    else if (spec.type === 'bool') raw = 'true';
    else {
      const next = argv[i + 1];
      // A following long flag is not a value: `--kubeconfig --dry-run` forgot the path.
      if (next === undefined || next.startsWith('--')) throw new FlagError(`flag needs an argument: --${name}`);
      raw = next;
      i++;
    }
    const v = parseValue(spec, raw);
    const why = spec.validate?.(v);
    if (why !== undefined) throw new FlagError(`invalid value "${raw}" for flag --${name}: ${why}`);
    const prev = values[name];
    values[name] = spec.type === 'stringList' && seen.has(name) && Array.isArray(prev) && Array.isArray(v) ? [...prev, ...v] : v;
    seen.add(name);
  }
  return { values, help, positional };
}

const TYPE_NAMES: Record<FlagType, string> = {
  string: 'string',
  int: 'int',
  float: 'float',
  bool: '',
  duration: 'duration',
  stringList: 'strings',
};

/** The default as pflag prints it: strings quoted, lists bracketed, durations Go-style. */
function formatDefault(spec: FlagSpec): string {
  const v = spec.default;
  switch (spec.type) {
    case 'duration':
      return formatDuration(Number(v));
    case 'stringList':
      return `[${(Array.isArray(v) ? v : [String(v)]).join(',')}]`;
    case 'string':
      return JSON.stringify(String(v));
    default:
      return String(v);
  }
}

/**
 * kube-style help: one line per flag, sorted by name, each with its type (none for bools), help
 * and default, e.g. `      --kube-api-qps float   QPS to use … (default 20)`; then -h/--help.
 */
export function formatHelp(specs: readonly FlagSpec[]): string {
  const rows = [...specs]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((s) => ({
      left: `      --${s.name}${TYPE_NAMES[s.type] ? ` ${TYPE_NAMES[s.type]}` : ''}`,
      right: `${s.help} (default ${formatDefault(s)})`,
    }));
  rows.push({ left: '  -h, --help', right: 'Show this help and exit.' });
  const width = Math.max(...rows.map((r) => r.left.length)) + 3;
  return rows.map((r) => r.left.padEnd(width) + r.right).join('\n');
}

/** A validator: numbers below `min` are refused. */
export const atLeast =
  (min: number) =>
  (v: FlagValue): string | undefined =>
    typeof v === 'number' && v < min ? `must be at least ${min}` : undefined;

/**
 * For the small command lines around the manager (the benchmarks): the parsed options, or the exit
 * code once help (0) or a flag error with the help (2) has been printed.
 */
export function parseCommandLine<T extends { help: boolean }>(argv: readonly string[], parse: (argv: readonly string[]) => T, help: () => string): T | number {
  let opts: T;
  try {
    opts = parse(argv);
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    process.stderr.write(`error: ${err.message}\n\n${help()}\n`);
    return 2;
  }
  if (!opts.help) return opts;
  process.stdout.write(`${help()}\n`);
  return 0;
}
