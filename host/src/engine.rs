wasmtime::component::bindgen!({ path: "../wit", world: "sink-coordinator" });
