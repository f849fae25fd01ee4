//! One module per command of the binary: its arguments and its `main`, which reads the inputs, calls
//! the library and formats what comes back.

pub(crate) mod deployer;
pub(crate) mod diff;
pub(crate) mod render;
pub(crate) mod rollback;
pub(crate) mod run;
pub(crate) mod status;
