/** One line of the doctor's table. */
export interface CheckResult {
  name: string;
  status: 'ok' | 'fail' | 'skip';
  /** What was found (never a secret). */
  found: string;
  /** What to do about a failure. */
  fix?: string;
}

export const ok = (name: string, found: string): CheckResult => ({ name, status: 'ok', found });
export const fail = (name: string, found: string, fix: string): CheckResult => ({ name, status: 'fail', found, fix });
export const skip = (name: string, found: string): CheckResult => ({ name, status: 'skip', found });
