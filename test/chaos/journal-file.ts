import { readFileSync, watch } from 'node:fs';
import { dirname } from 'node:path';

/** How many whole lines of `file` are `line` right now (read synchronously: the moment matters). */
export function countLine(file: string, line: string): number {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l === line).length;
}

/**
 * Resolves true as soon as `file` holds `line` more than `before` times, checked on every change
 * inotify reports in its folder (edits replace the file by a rename, so the file's own inode
 * never changes again), or false after `ms`.
 */
export function whenLineAdded(file: string, line: string, before: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (added: boolean) => {
      clearTimeout(timer);
      watcher.close();
      resolve(added);
    };
    const check = () => countLine(file, line) > before && done(true);
    const watcher = watch(dirname(file), check);
    const timer = setTimeout(() => done(false), ms);
    check();
  });
}
