// The import command's progress bar (a real cli-progress SingleBar drawing into a stream that says it is
// a terminal): an error line is printed above the bar and the bar comes back where it was, not at 0.
import { Writable } from 'node:stream';
import cliProgress from 'cli-progress';
import { describe, expect, it } from 'vitest';
import { importProgressDisplay } from '../../services/catalog/importer.ts';

/** A terminal-like stream that records what is written, with ANSI control sequences removed. */
function fakeTerminal() {
  let text = '';
  const stream = Object.assign(
    new Writable({
      write(chunk, _enc, done) {
        text += String(chunk);
        done();
      },
    }),
    { isTTY: true, columns: 200 },
  );
  return {
    stream,
    /** what was written since the last call, control sequences stripped, bar redraws on their own line */
    take(): string {
      const t = text
        .replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b[78]/g, '\n')
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .join('\n');
      text = '';
      return t;
    },
  };
}

describe('catalog import progress display', () => {
  it('keeps its position and counts across error lines', () => {
    const term = fakeTerminal();
    const bar = new cliProgress.SingleBar(
      {
        format: 'importing {percentage}% | line {line} | {produced} records',
        stream: term.stream,
        clearOnComplete: true,
      },
      cliProgress.Presets.shades_classic,
    );
    const display = importProgressDisplay(bar, term.stream, 1_000);
    try {
      display.start();
      expect(term.take()).toBe('importing 0% | line 0 | 0 records');
      display.onProgress({ bytes: 400, totalBytes: 1_000, line: 2_000, produced: 1_500 });
      bar.render();
      expect(term.take()).toContain('importing 40% | line 2000 | 1500 records');

      display.onError({ line: 2_001, message: 'variants[0].price: expected a decimal', issues: [] });
      expect(bar.getProgress()).toBe(0.4);
      // the error line above, then the bar again at 40 %, the bad line and the records produced so far
      expect(term.take().split('\n')).toEqual([
        'line 2001: variants[0].price: expected a decimal',
        'importing 40% | line 2001 | 1500 records',
      ]);

      display.onError({ line: 2_002, message: '(line): not valid JSON', issues: [] });
      expect(term.take().split('\n')).toEqual([
        'line 2002: (line): not valid JSON',
        'importing 40% | line 2002 | 1500 records',
      ]);

      display.onProgress({ bytes: 1_000, totalBytes: 1_000, line: 3_000, produced: 2_400 });
      bar.render();
      expect(term.take()).toContain('importing 100% | line 3000 | 2400 records');
      expect(bar.getProgress()).toBe(1);
    } finally {
      display.stop();
    }
  });
});
