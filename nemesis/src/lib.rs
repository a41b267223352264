//! Nemesis: faults behind one trait and seeded, replayable fault schedules. (Issue 5; not built yet.)
