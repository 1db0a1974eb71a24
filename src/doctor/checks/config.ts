import { loadConfig } from '../../config/load.js';
import { ConfigError } from '../../lib/config-error.js';
import type { Config } from '../../config/config.js';
import { fail, ok, type CheckResult } from '../types.js';

/** Every variable valid: the config, or one ✗ per line of the ConfigError. */
export function checkConfig(env: NodeJS.ProcessEnv): { config?: Config; results: CheckResult[] } {
  try {
    const config = loadConfig(env);
    const channels = Object.keys(config.channels);
    return { config, results: [ok('config', `every variable valid; channels: ${channels.length ? channels.join(', ') : 'none (terminal only)'}`)] };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return {
      results: err.lines.map((line) =>
        fail('config', line.replace(/^config: /, ''), 'set the variable as the README Configuration table says (an empty value counts as unset)'),
      ),
    };
  }
}
