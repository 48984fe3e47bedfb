//! `set-table-format` (WIT 0.2.5): looked up per component like
//! `events-packed`, because the bindings are generated from the oldest WIT
//! this host runs (0.2.1), which lacks it.

use sink_coordinator::TableFormatKind;
use wasmtime::component::{ComponentType, Lower, ResourceAny};

use super::ComponentCoordinator;
use crate::engine::wit;
use crate::error::{HostError, HostResult};

/// WIT `table-format`, lowered for the looked-up function.
#[derive(ComponentType, Lower, Clone, Copy)]
#[component(enum)]
#[repr(u8)]
enum WitTableFormat {
    #[component(name = "native")]
    Native,
    #[component(name = "paimon")]
    Paimon,
}

impl ComponentCoordinator {
    /// Whether the component has `set-table-format` (WIT 0.2.5 on).
    pub fn has_set_table_format(&self) -> bool {
        self.instance
            .live
            .as_ref()
            .is_some_and(|(_, b)| b.set_table_format.is_some())
    }

    /// Chooses the table format (WIT `set-table-format`): only while
    /// `created`. A component older than 0.2.5 writes the native log only:
    /// asked for [`TableFormatKind::Native`] it needs no call; asked for
    /// another format it is refused with `invalid-config` (nothing enters the
    /// guest, the instance stays usable).
    pub fn set_table_format(&mut self, kind: TableFormatKind) -> HostResult<()> {
        let format = match kind {
            TableFormatKind::Native => WitTableFormat::Native,
            TableFormatKind::Paimon => WitTableFormat::Paimon,
        };
        if !self.has_set_table_format() && self.instance.live.is_some() {
            if kind == TableFormatKind::Native {
                return Ok(());
            }
            return Err(HostError::core(
                sink_coordinator::ErrorKind::InvalidConfig,
                format!(
                    "table-format {}: the component has no set-table-format (it needs WIT 0.2.5 or later)",
                    kind.name()
                ),
            ));
        }
        let handle = self.handle;
        self.instance.call("set-table-format", |store, b| {
            let func = b.set_table_format.ok_or_else(|| {
                wasmtime::format_err!("the component has no set-table-format function")
            })?;
            let typed =
                func.typed::<(ResourceAny, WitTableFormat), (Result<(), wit::Error>,)>(&*store)?;
            let (r,) = typed.call(&mut *store, (handle, format))?;
            Ok(r)
        })
    }
}
