// peers-java: the peer workloads (../peers.h) on Java's virtual threads
// (JDK 21 or later), library "java-virtual", with the options and CSV lines
// of every driver. Virtual threads run on a ForkJoinPool of carrier threads,
// one per CPU the process may use (the JDK's default).
//
//   spawn-wait   the main thread submits N empty tasks to a
//                newVirtualThreadPerTaskExecutor (a virtual thread each),
//                then close() waits for all of them
//   fib-tree     every call with n >= 2 starts two virtual threads for
//                fib(n-1) and fib(n-2) and joins both; the root is one too
//   spawn-join   inside a virtual thread: start an empty virtual thread,
//                join it, N times
//   pingpong     two virtual threads, two SynchronousQueues. The JDK cannot
//                pin a virtual thread to a carrier: both may run on one
//   mutex-tT     T virtual threads, a ReentrantLock around every addition
//
// The JIT: each workload runs once at --small sizes, untimed, before the
// timed run, so the timed run measures compiled code (not a JMH harness:
// one warm-up, one measurement, as for the other drivers' single run).
import java.util.concurrent.Executors;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

public final class Peers {
	static final String PROG = "peers-java";
	static final String LIB = "java-virtual";

	static final class Opts {
		int rep = 1;
		boolean small;
		String only;
		long spawnN, joinN, pingN, mutexN;
		int fibN;

		boolean want(String w) {
			return only == null || only.equals(w);
		}

		void sizes(boolean small, long fibN) {
			this.small = small;
			spawnN = small ? 2000 : 500_000;
			joinN = small ? 2000 : 200_000;
			pingN = small ? 2000 : 100_000;
			mutexN = small ? 20_000 : 3_000_000;
			this.fibN = fibN > 0 ? (int) fibN : small ? 15 : 25;
		}
	}

	static void die(String what) {
		System.err.println(PROG + ": " + what);
		System.exit(1);
	}

	static final String USAGE = "usage: " + PROG
			+ " [--rep R] [--small] [--sort-n N] [--fib-n N] [--only WORKLOAD]\n       " + PROG
			+ " --help | --version";

	static void usage() {
		System.err.println(USAGE);
		System.exit(2);
	}

	static long count(String opt, String[] args, int i) {
		long v = 0;
		try {
			v = i + 1 < args.length ? Long.parseLong(args[i + 1]) : 0;
		} catch (NumberFormatException e) {
			v = 0;
		}
		if (v < 1) {
			System.err.println(PROG + ": " + opt + " needs a positive integer");
			System.exit(2);
		}
		return v;
	}

	static Opts parse(String[] args) {
		Opts o = new Opts();
		boolean small = false;
		long fibN = 0;
		for (int i = 0; i < args.length; i++) {
			switch (args[i]) {
			case "--small" -> small = true;
			case "--rep" -> o.rep = (int) count(args[i], args, i++);
			case "--sort-n" -> count(args[i], args, i++); // psort is not here
			case "--fib-n" -> {
				fibN = count(args[i], args, i++);
				if (fibN > 40)
					die("--fib-n is at most 40");
			}
			case "--only" -> {
				if (i + 1 >= args.length)
					usage();
				o.only = args[++i];
			}
			case "-h", "--help" -> {
				System.out.println(USAGE);
				System.exit(0);
			}
			// weft.version: set by the peers-java script build-runtimes.sh writes.
			case "--version" -> {
				System.out.println(PROG + " (weft) " + System.getProperty("weft.version", "unknown"));
				System.exit(0);
			}
			default -> {
				System.err.println(PROG + ": unknown option '" + args[i] + "'");
				usage();
			}
			}
		}
		o.sizes(small, fibN);
		return o;
	}

	static void emit(Opts o, boolean timed, String workload, long n, long ns) {
		if (timed)
			System.out.printf("%s,%s,%d,%d,%.3f%n", workload, LIB, o.rep, n, (double) ns / n);
	}

	static long fibValue(int n) {
		long a = 0, b = 1;
		for (int i = 0; i < n; i++) {
			long c = a + b;
			a = b;
			b = c;
		}
		return a;
	}

	static void join(Thread t) {
		try {
			t.join();
		} catch (InterruptedException e) {
			die("interrupted");
		}
	}

	static void spawnWait(Opts o, boolean timed) {
		LongAdder ran = new LongAdder();
		long t0 = System.nanoTime();
		try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
			for (long i = 0; i < o.spawnN; i++)
				ex.execute(ran::increment);
		} // close() waits for every task
		long ns = System.nanoTime() - t0;
		if (ran.sum() != o.spawnN)
			die("spawn-wait: wrong count");
		emit(o, timed, "spawn-wait", o.spawnN, ns);
	}

	static long fibCall(int n) {
		if (n < 2)
			return n;
		long[] r = new long[2];
		Thread a = Thread.ofVirtual().start(() -> r[0] = fibCall(n - 1));
		Thread b = Thread.ofVirtual().start(() -> r[1] = fibCall(n - 2));
		join(a);
		join(b);
		return r[0] + r[1]; // join orders the children's writes before this read
	}

	static void fibTree(Opts o, boolean timed) {
		long[] v = new long[1];
		long t0 = System.nanoTime();
		join(Thread.ofVirtual().start(() -> v[0] = fibCall(o.fibN)));
		long ns = System.nanoTime() - t0;
		if (v[0] != fibValue(o.fibN))
			die("fib-tree: wrong value");
		emit(o, timed, "fib-tree", 2 * fibValue(o.fibN + 1) - 1, ns);
	}

	static void spawnJoin(Opts o, boolean timed) {
		long[] ran = new long[1], ns = new long[1];
		Runnable child = () -> ran[0]++; // one child at a time, ordered by join
		join(Thread.ofVirtual().start(() -> {
			long t0 = System.nanoTime();
			for (long i = 0; i < o.joinN; i++)
				join(Thread.ofVirtual().start(child));
			ns[0] = System.nanoTime() - t0;
		}));
		if (ran[0] != o.joinN)
			die("spawn-join: wrong number of children");
		emit(o, timed, "spawn-join", o.joinN, ns[0]);
	}

	static void pingpong(Opts o, boolean timed) {
		var there = new SynchronousQueue<Long>();
		var back = new SynchronousQueue<Long>();
		long[] bad = new long[1], ns = new long[1];
		Thread b = Thread.ofVirtual().start(() -> {
			try {
				for (long i = 0; i < o.pingN; i++)
					back.put(there.take() + 1);
			} catch (InterruptedException e) {
				die("interrupted");
			}
		});
		Thread a = Thread.ofVirtual().start(() -> {
			try {
				long t0 = System.nanoTime();
				for (long i = 0; i < o.pingN; i++) {
					there.put(i);
					if (back.take() != i + 1)
						bad[0]++;
				}
				ns[0] = System.nanoTime() - t0;
			} catch (InterruptedException e) {
				die("interrupted");
			}
		});
		join(a);
		join(b);
		if (bad[0] != 0)
			die("pingpong: wrong reply");
		emit(o, timed, "pingpong", o.pingN, ns[0]);
	}

	static int[] mutexR;
	static int mutexRes;

	static void mutexRun(Opts o, boolean timed, int threads) {
		ReentrantLock lock = new ReentrantLock();
		int[] r = mutexR;
		long n = o.mutexN;
		mutexRes = 0;
		Thread[] ts = new Thread[threads];
		long t0 = System.nanoTime();
		for (int t = 0; t < threads; t++) {
			final int first = t;
			ts[t] = Thread.ofVirtual().start(() -> {
				for (long i = first; i < n; i += threads) {
					lock.lock();
					try {
						mutexRes += r[(int) i] * r[(int) i];
					} finally {
						lock.unlock();
					}
				}
			});
		}
		for (Thread t : ts)
			join(t);
		long ns = System.nanoTime() - t0;
		int want = 0; // int arithmetic wraps mod 2^32, as peers_mutex_expect's
		for (int i = 0; i < n; i++)
			want += i * i;
		if (mutexRes != want)
			die("mutex: wrong sum");
		emit(o, timed, "mutex-t" + threads, n, ns);
	}

	static void runAll(Opts o, boolean timed) {
		if (o.want("spawn-wait"))
			spawnWait(o, timed);
		mutexR = new int[(int) o.mutexN];
		for (int i = 0; i < o.mutexN; i++)
			mutexR[i] = i;
		for (int t : new int[] {2, 8}) // peers.h's PEERS_MUTEX_T1, _T2
			if (o.want("mutex-t" + t))
				mutexRun(o, timed, t);
		if (o.want("fib-tree"))
			fibTree(o, timed);
		if (o.want("spawn-join"))
			spawnJoin(o, timed);
		if (o.want("pingpong"))
			pingpong(o, timed);
	}

	public static void main(String[] args) {
		Opts o = parse(args);
		if (!o.small) {
			Opts warm = new Opts();
			warm.only = o.only;
			warm.sizes(true, 0);
			runAll(warm, false);
		}
		runAll(o, true);
		System.out.flush();
	}
}
