import pino, { type Logger } from 'pino';

/** The service's root logger: JSON lines on stdout, `service` on every line. */
export function createLogger(service: string, level: string): Logger {
  return pino({ level, base: { service }, timestamp: pino.stdTimeFunctions.isoTime });
}

/** A logger that writes nothing, the default for libraries when the caller passes none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
