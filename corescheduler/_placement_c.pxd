# Types for the compiled twin of _placement_py.py (Cython pure-Python mode).
cimport cython

@cython.locals(tasks=cython.long, per_task=cython.long, by_mem=cython.long)
cpdef long node_capacity(long free_cpus, long free_mem, long total_cpus, long cpus_per_task,
                         long mem_per_node, long mem_per_cpu, int exclusive)

@cython.locals(total=cython.long, count=cython.Py_ssize_t, limit=cython.Py_ssize_t,
               i=cython.Py_ssize_t, idx=cython.Py_ssize_t, cap=cython.long, n=cython.Py_ssize_t,
               k=cython.Py_ssize_t, remaining=cython.long, progressed=cython.int)
cpdef object place(list free_cpus, list free_mem, list total_cpus, list order,
                   long nodes_min, long nodes_max, long ntasks, long cpus_per_task,
                   long ntasks_per_node, long mem_per_node, long mem_per_cpu, int exclusive)
