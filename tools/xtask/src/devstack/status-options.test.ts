import { describe, expect, it } from 'vitest';
import { DevstackOptionError, parseDevstackOptions, statusPortOf } from './options.ts';

describe('--status-port', () => {
  it('defaults to the port below the services\' first: 7100, or N-1 with --port-base N', () => {
    expect(statusPortOf(parseDevstackOptions([], '/repo'))).toBe(7100);
    expect(statusPortOf(parseDevstackOptions(['--port-base', '9101'], '/repo'))).toBe(9100);
    expect(statusPortOf(parseDevstackOptions(['--port-base', '9101', '--status-port', '8000'], '/repo'))).toBe(8000);
  });

  it('takes 0 (any free port) and off (no page)', () => {
    expect(statusPortOf(parseDevstackOptions(['--status-port', '0'], '/repo'))).toBe(0);
    expect(parseDevstackOptions(['--status-port', 'off'], '/repo').statusPort).toBe('off');
    expect(statusPortOf(parseDevstackOptions(['--status-port', 'off'], '/repo'))).toBeUndefined();
  });

  it.each([['80'], ['65536'], ['7100x'], ['on']])('refuses --status-port %j naming the value', (value) => {
    const error = (() => {
      try {
        return parseDevstackOptions(['--status-port', value], '/repo');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(DevstackOptionError);
    expect(error).toMatchObject({ option: 'status-port', value });
    expect((error as Error).message).toBe(`--status-port ${JSON.stringify(value)}: must be a port from 1024 to 65535, 0 (any free port) or off`);
  });

  it('keeps --port-base from 1025, so the page\'s port is not a privileged one', () => {
    expect(() => parseDevstackOptions(['--port-base', '1024'], '/repo')).toThrow('--port-base "1024": must be a whole number from 1025 to 65527');
  });
});
