// The layers of runtime/ (docs/ARCHITECTURE.md): api | stream | scheduler -> engine -> store,
// with model/, shared/ and compiler/ below them all. camunda/ holds the Camunda 7
// compatibility in the same three layers (camunda/api, camunda/engine, camunda/store).
// `npm run lint` checks these rules.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'modules import each other', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'store-points-down',
      comment: 'the store knows tables and statements, not transitions, routes or streams',
      severity: 'error',
      from: { path: '^runtime/(camunda/)?store/' },
      to: { path: '^runtime/((camunda/)?(engine|api)|stream|scheduler|ops|security)/' },
    },
    {
      name: 'engine-points-down',
      comment: 'the engine is called by routes and streams, never the other way',
      severity: 'error',
      from: { path: '^runtime/(camunda/)?engine/' },
      to: { path: '^runtime/((camunda/)?api|stream|scheduler|security)/' },
    },
    {
      name: 'stream-not-api',
      severity: 'error',
      from: { path: '^runtime/stream/' },
      to: { path: '^runtime/(camunda/)?api/' },
    },
    {
      name: 'core-not-camunda',
      comment: 'Camunda compatibility sits on the core; the core does not know it',
      severity: 'error',
      from: { path: '^runtime/(engine|store|model|shared|compiler|stream|scheduler)/' },
      to: { path: '^runtime/camunda/' },
    },
    {
      name: 'model-below-all',
      comment: 'types shared by the engine and the store',
      severity: 'error',
      from: { path: '^runtime/model/' },
      to: { path: '^runtime/', pathNot: '^runtime/(model|shared|compiler)/' },
    },
    {
      name: 'compiler-stands-alone',
      comment: 'the compiler runs in the browser too',
      severity: 'error',
      from: { path: '^runtime/compiler/' },
      to: { path: '^runtime/', pathNot: '^runtime/(compiler|shared)/' },
    },
    {
      name: 'designer-not-server',
      comment: 'the designer is a browser app: it may use the compiler, never the server',
      severity: 'error',
      from: { path: '^designer/' },
      to: { path: '^runtime/', pathNot: '^runtime/(compiler|shared)/' },
    },
    {
      name: 'worker-sdk-stands-alone',
      comment: 'the worker SDK is its own npm package (runtime/worker/package.json): it ships no server code',
      severity: 'error',
      from: { path: '^runtime/worker/' },
      to: { path: '^runtime/', pathNot: '^runtime/worker/' },
    },
    {
      name: 'worker-sdk-declared-dependencies',
      comment: 'the worker SDK package depends on pino alone; anything else would be missing where it is installed',
      severity: 'error',
      from: { path: '^runtime/worker/' },
      to: { path: 'node_modules/', pathNot: '(^|/)node_modules/pino/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Build output: the worker package's, and Vite's designer/dist, whose chunks import each other
    // (the lazy form-js chunk and the main one).
    exclude: { path: '^(runtime/worker|designer)/dist/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
