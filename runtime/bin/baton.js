#!/usr/bin/env node
// The `baton` command (package.json "bin"): runs runtime/cli.ts through tsx's loader,
// registered in this process rather than a child's, so `baton serve` receives SIGINT and
// SIGTERM itself and the exit code is the CLI's own.
import { register } from 'tsx/esm/api';

register();
await import('../cli.ts');
