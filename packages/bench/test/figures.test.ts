/**
 * The docs' figures in headless Chromium (Debian's `chromium`; skipped
 * without it, as the status-page test is): a figure is drawn to a PNG of its
 * charts' size at twice the pixels, and a chart Chart.js cannot draw fails
 * the render with Chart.js's own message rather than writing a blank image.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHROMIUM, hline, renderFigures } from '../src/figures.ts';

const dir = mkdtempSync(join(tmpdir(), 'warmpath-plot-'));

/** A PNG's width and height, from its IHDR chunk. */
function pngSize(file: string): { width: number; height: number } {
  const b = readFileSync(file);
  expect(b.subarray(1, 4).toString('latin1')).toBe('PNG');
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

const HAVE_CHROMIUM = existsSync(CHROMIUM);
const NO_CHROMIUM = `SKIPPED: ${CHROMIUM} is missing; it comes with Debian's \`chromium\` package (apt-get install -y --no-install-recommends chromium; .ci/run installs it)`;
if (!HAVE_CHROMIUM) describe('figures (src/figures.ts)', () => it.skip(NO_CHROMIUM, () => {}));

describe.skipIf(!HAVE_CHROMIUM)('figures (src/figures.ts)', () => {
  it('draws a figure of two charts side by side to a PNG, at twice the CSS pixels', async () => {
    const file = join(dir, 'two.png');
    const line = {
      type: 'line',
      data: {
        datasets: [
          {
            label: 'a',
            data: [
              { x: 1, y: 2 },
              { x: 10, y: 3 },
            ],
          },
          hline('goal', 2.5, 1, 10),
        ],
      },
      options: { scales: { x: { type: 'logarithmic' } } },
    };
    const bar = { type: 'bar', data: { labels: ['one', 'two'], datasets: [{ label: 'b', data: [1, 2] }] } };
    await renderFigures([{ file, charts: [line, bar], width: 300, height: 200 }]);
    const { width, height } = pngSize(file);
    // Two 300 × 200 charts, a 12 px gap and 12 px padding, at device scale 2.
    expect(width).toBe(2 * (12 + 300 + 12 + 300 + 12));
    expect(height).toBe(2 * (12 + 200 + 12));
    // Not a blank image: a drawn chart compresses to well over the few hundred bytes of an empty one.
    expect(readFileSync(file).length).toBeGreaterThan(5_000);
  }, 60_000);

  it('a chart Chart.js cannot draw fails the render, naming the figure', async () => {
    const file = join(dir, 'bad.png');
    await expect(
      renderFigures([{ file, charts: [{ type: 'no-such-chart', data: { datasets: [] } }] }]),
    ).rejects.toThrow(/bad\.png: Chart\.js failed: .*no-such-chart/);
    expect(existsSync(file)).toBe(false);
  }, 60_000);
});
