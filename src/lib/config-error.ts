/** Thrown when the environment does not fit the contract; `lines` has one line per variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
  }
}
