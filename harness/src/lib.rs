//! Harness: deployments (containers, clusters), node control, run orchestration, final heal and drain.
