#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| sink_coordinator_fuzz::table_walk(data));
