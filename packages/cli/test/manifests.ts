/**
 * Offline checks of Kubernetes manifests, shared by the deploy tests.
 *
 * - `schemaErrors`: each object against the Kubernetes API's own schemas, as
 *   the `kubernetes-models` package ships them (generated from the API's
 *   OpenAPI document, Kubernetes 1.34, compiled by ajv): types, enums,
 *   required fields.
 * - `unknownFieldErrors`: the same package's type declarations, generated
 *   from the same schemas, read by the TypeScript compiler with every object
 *   as a literal: an excess-property error at any depth is a field the API
 *   does not know — what kubectl's strict field validation refuses and an
 *   API server would otherwise drop silently. (The compiled schemas allow
 *   additional properties everywhere, as the API does.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { CLI_ROOT } from '../src/build.ts';

export const REPO = join(CLI_ROOT, '../..');
export const KUBE_DIR = join(REPO, 'deploy/kubernetes');

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

export interface Doc {
  /** Where it came from, for messages: `file#index`. */
  where: string;
  obj: KubeObject;
}

/** Every document of a YAML file, parsed as Kubernetes does (YAML 1.1: `0440` is octal, `yes` a boolean). */
export function loadYaml(path: string, label = path): Doc[] {
  return parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1' }).map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${label}#${i}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return { where: `${label}#${i}`, obj: doc.toJS() as KubeObject };
  });
}

/** Schema violations per document (empty when valid). */
export async function schemaErrors(docs: readonly Doc[]): Promise<string[]> {
  const errors: string[] = [];
  for (const { where, obj } of docs) {
    const mod = (await import(/* @vite-ignore */ `kubernetes-models/${obj.apiVersion}/${obj.kind}`)) as Record<
      string,
      new (data: unknown) => { validate(): void }
    >;
    const Model = mod[obj.kind];
    if (Model === undefined) {
      errors.push(`${where}: no schema for ${obj.apiVersion} ${obj.kind}`);
      continue;
    }
    try {
      new Model(obj).validate();
    } catch (err) {
      errors.push(`${where}: ${(err as Error).message}`);
    }
  }
  return errors;
}

/** Fields the Kubernetes API does not define, and type errors the compiler sees, per document. */
export function unknownFieldErrors(docs: readonly Doc[]): string[] {
  // One line per document, so a diagnostic's line names its document. The
  // virtual file sits in packages/cli so that `kubernetes-models` resolves.
  const file = join(CLI_ROOT, 'test', '__manifests__.ts');
  const source = docs
    .map(
      ({ obj }, i) =>
        `import type { I${obj.kind} as T${i} } from 'kubernetes-models/${obj.apiVersion}/${obj.kind}'; export const m${i}: T${i} = ${JSON.stringify(obj)};`,
    )
    .join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, lang, ...rest) =>
    name === file ? ts.createSourceFile(name, source, lang) : getSourceFile.call(host, name, lang, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? source : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (d.file?.fileName !== file || d.start === undefined) return text;
    const line = d.file.getLineAndCharacterOfPosition(d.start).line;
    return `${docs[line]?.where ?? '?'}: ${text}`;
  });
}
