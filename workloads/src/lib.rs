//! Workloads: broker drivers behind one client trait, op generators and the history recorder. (Issue 4; not built yet.)
