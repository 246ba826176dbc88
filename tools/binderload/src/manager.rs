// SPDX-License-Identifier: Apache-2.0
//! The context manager: a small service manager on rsbinder's generated
//! `android.os.IServiceManager` (Android 16 protocol, the one rsbinder's
//! `hub` client speaks on Linux).
//!
//! rsbinder's own service manager, `rsb_hub`, is a binary of the
//! rsbinder-tools crate with configuration files and an access policy, not a
//! library; this one keeps only what the workload needs: `addService`,
//! `getService`, `checkService` (both forms) and `listServices`, with a death
//! notification on every registered service so that its entry goes when its
//! process does. Every other method answers `UNKNOWN_TRANSACTION`.
//!
//! Protocol with the parent: `ready` once it is the context manager,
//! `died NAME` when a registered service's process dies, and `stats ...` when
//! its standard input closes, after which it exits.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rsbinder::hub::android_16::android::os::Service::Service;
use rsbinder::hub::android_16::android::os::ServiceWithMetadata::ServiceWithMetadata;
use rsbinder::hub::android_16::{
    BnServiceManager, ConnectionInfo, IClientCallback, IServiceCallback, IServiceManager,
    ServiceDebugInfo,
};
use rsbinder::{
    BinderResult, DeathRecipient, Interface, ProcessState, SIBinder, Status, StatusCode, Strong,
    WIBinder,
};

use crate::payload::Stats;
use crate::{report, wait_for_eof, Res};

/// A registered service and the death notification that removes it.
struct Entry {
    binder: SIBinder,
    /// Kept alive here: the driver's notification holds only a weak reference.
    _obituary: Arc<Obituary>,
}

/// The registry, shared with the death notifications.
#[derive(Default)]
struct Registry {
    services: Mutex<BTreeMap<String, Entry>>,
    added: AtomicU64,
    lookups: AtomicU64,
}

impl Registry {
    fn services(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        // A panic in a handler (caught by rsbinder) must not wedge the others.
        self.services.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lookup(&self, name: &str) -> Option<SIBinder> {
        let binder = self.services().get(name).map(|e| e.binder.clone());
        if binder.is_some() {
            self.lookups.fetch_add(1, Ordering::Relaxed);
        }
        binder
    }
}

/// Removes a dead service and tells the parent.
struct Obituary {
    name: String,
    registry: Arc<Registry>,
}

impl DeathRecipient for Obituary {
    fn binder_died(&self, who: &WIBinder) {
        let mut services = self.registry.services();
        if services.get(&self.name).is_some_and(|e| who == &e.binder) {
            services.remove(&self.name);
        }
        drop(services);
        report(&format!("died {}", self.name));
    }
}

/// The service manager object (handle 0 for every other process).
struct Manager {
    registry: Arc<Registry>,
}

impl Interface for Manager {}

fn unsupported<T>() -> BinderResult<T> {
    Err(Status::from(StatusCode::UnknownTransaction))
}

fn as_service(binder: Option<SIBinder>) -> Service {
    Service::ServiceWithMetadata(ServiceWithMetadata {
        service: binder,
        isLazyService: false,
    })
}

impl IServiceManager for Manager {
    fn getService(&self, name: &str) -> BinderResult<Option<SIBinder>> {
        Ok(self.registry.lookup(name))
    }

    fn getService2(&self, name: &str) -> BinderResult<Service> {
        Ok(as_service(self.registry.lookup(name)))
    }

    fn checkService(&self, name: &str) -> BinderResult<Option<SIBinder>> {
        Ok(self.registry.lookup(name))
    }

    fn checkService2(&self, name: &str) -> BinderResult<Service> {
        Ok(as_service(self.registry.lookup(name)))
    }

    fn addService(
        &self,
        name: &str,
        service: &SIBinder,
        _allow_isolated: bool,
        _dump_priority: i32,
    ) -> BinderResult<()> {
        if name.is_empty() {
            return Err(StatusCode::BadValue.into());
        }
        let obituary = Arc::new(Obituary {
            name: name.to_owned(),
            registry: Arc::clone(&self.registry),
        });
        // Only a proxy (a service of another process) can die.
        if service.as_proxy().is_some() {
            let weak: std::sync::Weak<dyn DeathRecipient> = Arc::downgrade(&obituary) as _;
            service.link_to_death(weak)?;
        }
        self.registry.services().insert(
            name.to_owned(),
            Entry {
                binder: service.clone(),
                _obituary: obituary,
            },
        );
        self.registry.added.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn listServices(&self, _dump_priority: i32) -> BinderResult<Vec<String>> {
        Ok(self.registry.services().keys().cloned().collect())
    }

    fn registerForNotifications(
        &self,
        _name: &str,
        _callback: &Strong<dyn IServiceCallback>,
    ) -> BinderResult<()> {
        unsupported()
    }

    fn unregisterForNotifications(
        &self,
        _name: &str,
        _callback: &Strong<dyn IServiceCallback>,
    ) -> BinderResult<()> {
        unsupported()
    }

    fn isDeclared(&self, _name: &str) -> BinderResult<bool> {
        Ok(false)
    }

    fn getDeclaredInstances(&self, _iface: &str) -> BinderResult<Vec<String>> {
        Ok(Vec::new())
    }

    fn updatableViaApex(&self, _name: &str) -> BinderResult<Option<String>> {
        Ok(None)
    }

    fn getUpdatableNames(&self, _apex_name: &str) -> BinderResult<Vec<String>> {
        Ok(Vec::new())
    }

    fn getConnectionInfo(&self, _name: &str) -> BinderResult<Option<ConnectionInfo>> {
        Ok(None)
    }

    fn registerClientCallback(
        &self,
        _name: &str,
        _service: &SIBinder,
        _callback: &Strong<dyn IClientCallback>,
    ) -> BinderResult<()> {
        unsupported()
    }

    fn tryUnregisterService(&self, _name: &str, _service: &SIBinder) -> BinderResult<()> {
        unsupported()
    }

    fn getServiceDebugInfo(&self) -> BinderResult<Vec<ServiceDebugInfo>> {
        unsupported()
    }
}

/// Runs the service manager on `device` until standard input closes.
pub fn run(device: &str) -> Res<()> {
    // No thread pool of its own: one looper thread, as Android's servicemanager.
    ProcessState::init(device, 0).map_err(|e| format!("opening {device}: {e}"))?;
    let registry = Arc::new(Registry::default());
    let manager = BnServiceManager::new_binder(Manager {
        registry: Arc::clone(&registry),
    });
    ProcessState::as_self()
        .become_context_manager(manager.as_binder())
        .map_err(|e| format!("becoming the context manager of {device}: {e}"))?;
    std::thread::Builder::new()
        .name("looper".into())
        .spawn(|| {
            if let Err(e) = ProcessState::join_thread_pool() {
                crate::fail(&format!("the looper thread failed: {e}"));
            }
        })
        .map_err(|e| format!("starting the looper thread: {e}"))?;
    report("ready");
    wait_for_eof();
    let stats = Stats {
        added: registry.added.load(Ordering::Relaxed),
        lookups: registry.lookups.load(Ordering::Relaxed),
        ..Stats::default()
    };
    report(&stats.to_string());
    Ok(())
}
