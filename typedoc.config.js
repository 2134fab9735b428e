// @ts-check
// The API reference (`npm run docs`): the TSDoc of both entry points, with the README as its home
// page and the guides it links as documents. A JavaScript file, not typedoc.json, for the
// markdown-it hook below.

/**
 * TypeDoc names a heading in the page's table of contents (and its anchor) after the heading's
 * text tokens only, so inline code vanished from it: "The demo ()" for "The demo (`npm start`)",
 * an empty entry for "`kinsumer status`". Giving each inline code token of a heading a text child
 * of the same content puts the code back in the contents and the anchor (`#kinsumer-status`, as
 * GitHub makes it); the heading itself still renders the code as code (markdown-it draws inline
 * code from the token's content, not its children).
 * @param {any} parser TypeDoc's markdown-it instance
 */
function headingCodeInContents(parser) {
  parser.core.ruler.push('kinsumer-heading-code', (/** @type {any} */ state) => {
    const tokens = state.tokens;
    for (let i = 1; i < tokens.length; i += 1) {
      if (tokens[i].type !== 'inline' || tokens[i - 1].type !== 'heading_open') continue;
      for (const child of tokens[i].children ?? []) {
        if (child.type !== 'code_inline') continue;
        const text = new state.Token('text', '', 0);
        text.content = child.content;
        child.children = [text];
      }
    }
  });
}

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  entryPoints: ['src/index.ts', 'src/testing/index.ts'],
  tsconfig: 'tsconfig.build.json',
  out: 'docs/api',
  name: 'kinsumer',
  readme: 'README.md',
  // The guides moved out of the README (issue 34); the package test checks the names their code
  // spans use, as it checks the README's.
  projectDocuments: [
    'docs/operating.md', 'docs/cli.md', 'docs/exactly-once.md', 'docs/opentelemetry.md',
    'docs/from-lambda.md', 'docs/from-go.md', 'docs/from-kcl.md',
  ],
  headings: { readme: false },
  excludePrivate: true,
  excludeInternal: true,
  disableSources: true,
  treatWarningsAsErrors: false,
  validation: { notExported: true, invalidLink: true, notDocumented: true },
  markdownItLoader: headingCodeInContents,
};
