/**
 * Figures for the docs as PNG images: Chart.js (the library the HTML report
 * inlines) drawn in headless Chromium (Debian's `chromium`, driven by
 * playwright-core). A figure is one or more charts side by side, saved as
 * one image; every chart is a plain Chart.js configuration (data, no
 * functions), so what a figure shows is in its JSON.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { chartJsSource } from './report.ts';

/** One Chart.js chart: its `type`, `data` and `options`, as Chart.js takes them. */
export interface ChartSpec {
  type: string;
  data: unknown;
  options?: Record<string, unknown>;
}

export interface Figure {
  /** The PNG's path. */
  file: string;
  charts: ChartSpec[];
  /** One chart's size in CSS pixels (the image is drawn at twice that). */
  width?: number;
  height?: number;
}

/** Where Debian's `chromium` package puts the browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Writes every figure's PNG, and the same page as HTML beside it when `html` is set (to look at or debug). */
export async function renderFigures(figures: readonly Figure[], html = false): Promise<void> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} not found: figures are drawn in headless Chromium (Debian: apt-get install chromium)`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    for (const fig of figures) {
      // A page of its own: setContent on a used page would run the script in the old page's globals.
      const page = await browser.newPage({ deviceScaleFactor: 2 });
      const content = figurePage(fig);
      if (html) writeFileSync(fig.file.replace(/\.png$/, '.html'), content);
      await page.setContent(content);
      await page.waitForFunction('window.drawn === true');
      const failures = (await page.evaluate('window.failures')) as string[];
      if (failures.length > 0) throw new Error(`${fig.file}: Chart.js failed: ${failures.join('; ')}`);
      await page.locator('#figure').screenshot({ path: fig.file });
      await page.close();
    }
  } finally {
    await browser.close();
  }
}

/** A self-contained page drawing one figure, its charts in a row, with no animation. */
function figurePage(fig: Figure): string {
  const w = fig.width ?? 420;
  const h = fig.height ?? 300;
  const charts = JSON.stringify(fig.charts).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<style>body{margin:0;background:#fff;font:13px system-ui,sans-serif}#figure{display:inline-flex;gap:12px;padding:12px;background:#fff}.c{width:${w}px;height:${h}px}</style>
<script>${chartJsSource()}</script></head><body><div id="figure"></div>
<script>
const charts = ${charts};
window.failures = [];
Chart.defaults.animation = false;
Chart.defaults.font.family = 'system-ui, sans-serif';
for (const spec of charts) {
  const box = document.createElement('div');
  box.className = 'c';
  const canvas = document.createElement('canvas');
  box.appendChild(canvas);
  document.getElementById('figure').appendChild(box);
  try {
    // An unknown chart type would draw nothing without a word: the registry names it.
    Chart.registry.getController(spec.type);
    new Chart(canvas, { ...spec, options: { responsive: true, maintainAspectRatio: false, ...(spec.options || {}) } });
  } catch (e) {
    window.failures.push(String(e && e.message || e));
  }
}
window.drawn = true;
</script></body></html>`;
}

/** Grey: references and goals. */
export const GOAL_COLOR = '#555';

/** A dashed line through `data` for a reference or a goal, drawn over bars (a lower `order` is drawn later). */
export function goalLine(label: string, data: unknown[]): Record<string, unknown> {
  return {
    type: 'line',
    label,
    data,
    borderColor: GOAL_COLOR,
    backgroundColor: GOAL_COLOR,
    borderDash: [6, 4],
    borderWidth: 1.5,
    pointRadius: 0,
    fill: false,
    order: 0,
  };
}

/** A goalLine across the x range [xMin, xMax] at y. */
export function hline(label: string, y: number, xMin: number, xMax: number): Record<string, unknown> {
  return goalLine(label, [
    { x: xMin, y },
    { x: xMax, y },
  ]);
}

/** Colours for series, in order. */
export const COLORS = ['#d62728', '#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#7f7f7f'];
