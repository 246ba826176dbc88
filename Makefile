# SPDX-License-Identifier: GPL-2.0
#
# The driver of this repository: set-up, kernel tree, kernel builds,
# initramfs, QEMU boots and tests. The work is done by the scripts in
# tools/testing/malloc_types/; the build cache (kernel source, trees, build
# outputs, logs) lives outside the clone, in $(MT_CACHE).
#
#   make run     build what is missing, boot the production kernel, run the main job
#   make check   build what is missing, run every test, print `N passed, N failed`
#   make series  write the kernel patch series and its cover letter (outgoing/)

MT := tools/testing/malloc_types
MT_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/malloc-types
export MT_CACHE

# One build at a time per cache: concurrent makes (or clones) queue here.
LOCKED := flock $(MT_CACHE)/.lock

.PHONY: all help run check series series-build bench setup tree kernel kernel-prod tools shell clean distclean \
	install-libmemstat uninstall-libmemstat

all: help

help:
	@sed -n 's/^#   make /  make /p' $(firstword $(MAKEFILE_LIST))
	@echo "  make setup        install packages, toolchain, bindgen and the kernel source"
	@echo "  make bench        the cost of typed accounting, side by side with kmalloc"
	@echo "  make series-build build the kernel after every patch of the series (W=1)"
	@echo "  make kernel       build the test kernel ($(MT_CACHE))"
	@echo "  make kernel-prod  build the production kernel"
	@echo "  make tree         lay this repository over the kernel source"
	@echo "  make tools        build the static memstat tools for the guest"
	@echo "  make shell        boot the test kernel with a shell on the console"
	@echo "  make install-libmemstat   install libmemstat for C (PREFIX=/usr/local, DESTDIR=)"
	@echo "  make clean        remove build outputs (keeps the source and tools)"
	@echo "  make distclean    remove the whole cache"

$(MT_CACHE):
	@mkdir -p $@

run: | $(MT_CACHE)
	@$(LOCKED) bash $(MT)/run.sh

check: | $(MT_CACHE)
	@$(LOCKED) bash $(MT)/check.sh

# SIGNOFF="Name <email>" signs the series (default: the repository's git
# identity); SERIES_DIR is where it goes.
series: setup
	@$(LOCKED) bash $(MT)/series.sh $(SERIES_DIR)

series-build: setup
	@$(LOCKED) bash $(MT)/series-build.sh

bench: | $(MT_CACHE)
	@$(LOCKED) bash $(MT)/bench.sh

setup: | $(MT_CACHE)
	@$(LOCKED) bash $(MT)/setup.sh

tree: setup
	@$(LOCKED) bash $(MT)/prepare-tree.sh

kernel: tree
	@$(LOCKED) bash $(MT)/build-kernel.sh test

kernel-prod: tree
	@$(LOCKED) bash $(MT)/build-kernel.sh prod

tools: setup
	@$(LOCKED) bash $(MT)/build-tools.sh

shell: kernel tools
	@$(LOCKED) bash $(MT)/mkinitramfs.sh test >/dev/null
	@. $(MT)/lib.sh; qemu-system-x86_64 -accel $${MT_ACCEL:-tcg,thread=single} -cpu max -smp 2 -m 2G -nographic -no-reboot \
		-kernel $$MT_KCACHE/build-test/arch/x86/boot/bzImage -initrd $$MT_KCACHE/initramfs-test.cpio.gz \
		-append "console=ttyS0 panic=-1 mt.mode=shell"

# libmemstat for C programs: <memstat.h>, libmemstat.so.1, libmemstat.a and
# memstat.pc under $(DESTDIR)$(PREFIX) (tools/memstat/capi/Makefile; PREFIX,
# DESTDIR, LIBDIR, INCLUDEDIR and PKGCONFIGDIR pass through).
install-libmemstat:
	$(MAKE) -C tools/memstat/capi install

uninstall-libmemstat:
	$(MAKE) -C tools/memstat/capi uninstall

clean:
	@. $(MT)/lib.sh; rm -rf "$$MT_KCACHE"/build-* "$$MT_KCACHE"/config-* "$$MT_KCACHE"/series-build/out "$$MT_KCACHE"/series-build/built "$$MT_KCACHE"/initramfs-* "$$MT_CACHE"/cargo-target*

distclean:
	rm -rf $(MT_CACHE)
