# Types for the compiled twin of _multifactor_py.py (Cython pure-Python mode).
cimport cython

@cython.locals(n=cython.Py_ssize_t, k=cython.Py_ssize_t, since=cython.double, age=cython.double,
               size=cython.double, a=cython.double, b=cython.double, total=cython.double,
               value=cython.long)
cpdef void priorities(double[::1] eligible, long[::1] nodes, long[::1] cpus,
                     double[::1] partition, double[::1] fairshare, double[::1] qos,
                       long[::1] nice, long[::1] out, double now, double max_age,
                       long total_nodes, long total_cpus, int favor_small, long w_age,
                       long w_assoc, long w_fairshare, long w_jobsize, long w_partition,
                       long w_qos, long site)
