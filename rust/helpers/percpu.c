// SPDX-License-Identifier: GPL-2.0

#include <linux/cpumask.h>
#include <linux/percpu.h>
#include <linux/preempt.h>

__rust_helper void __percpu *
rust_helper___alloc_percpu_gfp(size_t size, size_t align, gfp_t gfp)
{
	return __alloc_percpu_gfp(size, align, gfp);
}

__rust_helper void *rust_helper_per_cpu_ptr(void __percpu *ptr,
					    unsigned int cpu)
{
	return per_cpu_ptr(ptr, cpu);
}

__rust_helper void rust_helper_this_cpu_add_u64(u64 __percpu *ptr, u64 val)
{
	this_cpu_add(*ptr, val);
}

__rust_helper void rust_helper_this_cpu_or_u64(u64 __percpu *ptr, u64 val)
{
	this_cpu_or(*ptr, val);
}

__rust_helper bool rust_helper_cpu_possible(unsigned int cpu)
{
	return cpu_possible(cpu);
}

__rust_helper void rust_helper_preempt_disable(void)
{
	preempt_disable();
}

__rust_helper void rust_helper_preempt_enable(void)
{
	preempt_enable();
}
