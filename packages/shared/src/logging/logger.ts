import winston from 'winston';

export type LogFormat = 'json' | 'text';
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];

/** The logger type every package uses; child loggers carry structured fields (controller, key, ...). */
export type Logger = winston.Logger;

let stderrGuarded = false;
let root: Logger = makeLogger('info', 'json');

/**
 * Drops entries below the logger's level before any other format runs: winston filters by level
 * only in its transports, after the formats, so every `debug` call on a busy path would otherwise
 * be timestamped and serialized to JSON for nothing (a tenth of the binder's CPU in a profile).
 */
function belowLevel(level: LogLevel): winston.Logform.Format {
  const max = LOG_LEVELS.indexOf(level);
  return winston.format((info) => (LOG_LEVELS.indexOf(info.level as LogLevel) <= max ? info : false))();
}

/**
 * One entry in the text format: time, level, message, then each field as `key=<JSON>`. The message
 * is quoted as JSON when it holds a control character: winston appends a field named `message` to
 * it, and such a field may quote what a tenant wrote (a selected node, an Event's message), whose
 * newline would otherwise start a line of the tenant's making.
 */
export function textLine(info: winston.Logform.TransformableInfo): string {
  const { timestamp, level: lvl, message, ...fields } = info;
  const rest = Object.entries(fields)
    .filter(([k]) => typeof k === 'string')
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(' ');
  const text = String(message);
  // eslint-disable-next-line no-control-regex
  const shown = /[\u0000-\u001f\u007f\u2028\u2029]/.test(text) ? JSON.stringify(text) : text;
  return `${String(timestamp)} ${lvl.toUpperCase().padEnd(5)} ${shown}${rest ? ' ' + rest : ''}`;
}

/**
 * Log lines are best effort, as klog's: when the reader of stderr goes away (a container runtime's
 * log pipe), the next write fails with EPIPE, emitted on process.stderr, which had no listener and
 * so ended the process. The manager keeps working unlogged instead.
 */
function keepRunningWithoutStderr(): void {
  if (stderrGuarded) return;
  stderrGuarded = true;
  process.stderr.on('error', () => undefined);
}

function makeLogger(level: LogLevel, format: LogFormat): Logger {
  keepRunningWithoutStderr();
  const fmt =
    format === 'json'
      ? winston.format.combine(belowLevel(level), winston.format.timestamp(), winston.format.errors({ stack: false }), winston.format.json())
      : winston.format.combine(
          belowLevel(level),
          winston.format.timestamp(),
          winston.format.errors({ stack: false }),
          winston.format.printf(textLine),
        );
  // stderr, like klog: stdout stays free for a command's own output (e.g. --help).
  const l = winston.createLogger({
    level,
    format: fmt,
    transports: [new winston.transports.Console({ stderrLevels: [...LOG_LEVELS] })],
  });
  // Below debug, a debug call returns at once: winston would still push it through its streams.
  // Child loggers are created from this one with Object.create, so they inherit the no-op.
  if (level !== 'debug') l.debug = (() => l) as Logger['debug'];
  return l;
}

/** Reconfigure the process logger (called once by the manager from its flags). */
export function configureLogging(level: LogLevel, format: LogFormat): Logger {
  root = makeLogger(level, format);
  return root;
}

export function logger(): Logger {
  return root;
}

/** Turns anything thrown into a message fit for a log line or an Event. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}
