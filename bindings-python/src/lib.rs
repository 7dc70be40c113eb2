//! The native half of the Python package `polylock`: thin classes over the core that take
//! the owner explicitly. The idiomatic API (thread and task owners, `with`, asyncio) is the
//! Python code in `python/polylock/`; no lock logic lives on either side of this line.

mod client;
mod convert;
mod errors;
mod lock;
mod pending;
mod shared;
mod snowflake;

use pyo3::prelude::*;

#[pymodule]
mod _polylock {
    #[pymodule_export]
    use crate::client::NativeClient;
    #[pymodule_export]
    use crate::lock::NativeLock;
    #[pymodule_export]
    use crate::pending::PendingCall;
    #[pymodule_export]
    use crate::snowflake::{parse_snowflake, NativeSnowflake};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(module: &Bound<'_, PyModule>) -> PyResult<()> {
        module.add("MAX_NAME_LEN", polylock::MAX_NAME_LEN)?;
        module.add("DEFAULT_URL", polylock::url::DEFAULT_URL)?;
        module.add("__version__", env!("CARGO_PKG_VERSION"))?;
        Ok(())
    }
}
