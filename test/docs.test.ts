/**
 * The docs stay short enough to read and their links stay whole: README.md at
 * most 250 lines, every other doc (docs/*.md, packages/*\/README.md) at most
 * 500; every relative link points to a file that exists, and a link's
 * #anchor to a heading of the doc it names (GitHub's slugs).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const LIMITS = { readme: 250, other: 500 } as const;

const docs = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...readdirSync(join(REPO, 'packages'))
    .map((p) => `packages/${p}/README.md`)
    .filter((f) => existsSync(join(REPO, f))),
];

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchors(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)) out.add(slug(m[1]!));
  return out;
}

/** Every Markdown link target outside code, except absolute URLs. */
function links(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/i.test(l));
}

describe('docs', () => {
  it('finds the docs', () => {
    expect(docs.length).toBeGreaterThan(10);
  });

  for (const doc of docs) {
    const text = readFileSync(join(REPO, doc), 'utf8');
    it(`${doc} is within its length limit`, () => {
      const limit = doc === 'README.md' ? LIMITS.readme : LIMITS.other;
      expect(text.split('\n').length - (text.endsWith('\n') ? 1 : 0)).toBeLessThanOrEqual(limit);
    });

    it(`${doc}'s relative links point to existing files and headings`, () => {
      for (const link of links(text)) {
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path === '' ? join(REPO, doc) : join(REPO, dirname(doc), decodeURIComponent(path));
        expect(existsSync(target), `${doc}: ${link}`).toBe(true);
        if (anchor !== undefined && anchor !== '' && target.endsWith('.md'))
          expect(anchors(readFileSync(target, 'utf8')), `${doc}: ${link} (${relative(REPO, target)})`).toContain(
            anchor,
          );
      }
    });
  }
});
