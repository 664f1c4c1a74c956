# Types for the compiled twin of _placement_py.py (Cython pure-Python mode).
cimport cython

@cython.locals(tasks=cython.long, per_task=cython.long, by_mem=cython.long)
cpdef long node_capacity(long free_cpus, long free_mem, long total_cpus, long cpus_per_task,
                         long mem_per_node, long mem_per_cpu, int exclusive)

@cython.locals(count=cython.Py_ssize_t, k=cython.Py_ssize_t, idx=cython.Py_ssize_t, cap=cython.long,
               last=cython.long, drop=cython.long, biggest=cython.long)
cpdef object place(list free_cpus, list free_mem, list total_cpus, list order,
                   long nodes_min, long nodes_max, long ntasks, long cpus_per_task,
                   long ntasks_per_node, long mem_per_node, long mem_per_cpu, int exclusive,
                   list node_weight=*, list node_id=*, Py_ssize_t nreq=*)

@cython.locals(cap=cython.long)
cdef long _capacity(list free_cpus, list free_mem, list total_cpus, Py_ssize_t idx, long cpus_per_task,
                    long ntasks_per_node, long mem_per_node, long mem_per_cpu, int exclusive) except? -1

@cython.locals(count=cython.Py_ssize_t, want=cython.long, left=cython.long, rem_tasks=cython.long,
               rem_nodes=cython.long, min_rem=cython.long, k=cython.Py_ssize_t, cap=cython.long,
               take=cython.long, start=cython.Py_ssize_t, end=cython.Py_ssize_t, weight=cython.long,
               best=cython.Py_ssize_t, best_end=cython.Py_ssize_t, best_sum=cython.long,
               best_ok=cython.int, first=cython.Py_ssize_t, total=cython.long, nodes=cython.long,
               ok=cython.int, fit=cython.Py_ssize_t, n=cython.Py_ssize_t, idx=cython.Py_ssize_t,
               remaining=cython.long, progressed=cython.int, caps='long[::1]', ids='long[::1]', chosen=list, holds=list,
               tasks=list, bounds=list, pairs=list)
cdef object _best_fit(list free_cpus, list free_mem, list total_cpus, list order,
                      long nodes_min, long nodes_max, long ntasks, long cpus_per_task,
                      long ntasks_per_node, long mem_per_node, long mem_per_cpu, int exclusive,
                      list node_weight, list node_id, Py_ssize_t nreq, long drop)

@cython.locals(take=cython.long)
cdef long _take(long cap, long rem_tasks, long min_rem, long ntasks_per_node, int exclusive)

@cython.locals(total=cython.long, count=cython.Py_ssize_t, limit=cython.Py_ssize_t,
               i=cython.Py_ssize_t, idx=cython.Py_ssize_t, cap=cython.long, n=cython.Py_ssize_t,
               k=cython.Py_ssize_t, remaining=cython.long, progressed=cython.int)
cdef object _first_fit(list free_cpus, list free_mem, list total_cpus, list order,
                       long nodes_min, long nodes_max, long ntasks, long cpus_per_task,
                       long ntasks_per_node, long mem_per_node, long mem_per_cpu, int exclusive)

@cython.locals(c=cython.long, n=cython.Py_ssize_t, limits=list, rem=cython.long, m=cython.long,
               k=cython.Py_ssize_t, want=cython.long, lim=cython.long, tasks=list,
               remaining=cython.long, progressed=cython.int, bounds=list)
cpdef object deal(list holds, long ntasks, long nodes_min, long cpus_per_task, int exclusive)
