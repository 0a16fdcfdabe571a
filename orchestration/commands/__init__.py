"""The `bindery` commands, one module per concern: `pipeline` (sync, reindex, plan, runs, dlq),
`generations` (promote, rollback, discard, status, verify, gc), `evals` (eval, tune, evalset) and
`serving` (query, serve, ui, hash-key); `common` holds what they share. `orchestration.cli` parses
the command line, checks the configuration and maps errors to exit codes."""
