// kafkadump: Kafka log segments read in byte ranges through Spark's own Hadoop FileSystem.
//
// Compiled by kafkadump on first use (kafkadump/spark/jvm/__init__.py) against the jars PySpark
// ships, into a per-user cache directory; never part of the input or of the package.
//
// getSplits (on the driver) walks each file's batch headers: from position 0, a v2 batch (or a
// legacy message) is stepped over by its length when the step is one the Python decoder's walk
// takes whatever the CRC says (magic 2 and a length that fits, or a legacy message whose key and
// value tile it; and a plausible v2 header or legacy message where it ends).  Cuts are made only
// at such positions, and only where the item before the cut has a valid CRC (CRC-32C, CRC-32):
// that batch is read again by the chunk (its "resume" position), so the decoder starts with the
// walk's one piece of state (the last valid batch's last offset).  Where the walk cannot step by
// header (damage, padding), no cut is made: the rest of the file is one chunk,
// decoded whole, so the findings are those of a whole-file walk.
//
// A chunk (about kafkadump.chunk.bytes) is one record: key = the chunk's own start, value = the
// bytes from its resume position to its end.  Chunks of a file are grouped into splits of about
// kafkadump.split.bytes; small files are packed into one split as kafkadump packs them (bytes plus
// kafkadump.open.cost each, up to kafkadump.split.bytes).
package kafkadump.spark.jvm;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.zip.CRC32C;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapreduce.InputFormat;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.JavaNewHadoopRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;

public class KafkaSegmentInputFormat extends InputFormat<LongWritable, BytesWritable> {
    public static final String SPLIT_BYTES = "kafkadump.split.bytes";
    public static final String CHUNK_BYTES = "kafkadump.chunk.bytes";
    public static final String OPEN_COST = "kafkadump.open.cost";
    static final int HEADER_SIZE = 61;
    static final int MIN_BATCH_LENGTH = 49;
    static final int CRC_START = 21;
    static final long MAX_CRC_READ = 64L << 20;   // a longer batch before a cut is not re-read: no cut there
    static final long MAX_CHUNK = Integer.MAX_VALUE - 64;

    /** One chunk: bytes [resume, stop) of path read, items at [start, stop) kept. */
    public static final class Chunk {
        public final String path;
        public final long resume, start, stop;

        Chunk(String path, long resume, long start, long stop) {
            this.path = path;
            this.resume = resume;
            this.start = start;
            this.stop = stop;
        }
    }

    /** A task's chunks, of one file or of several small ones, in file order. */
    public static class Split extends InputSplit implements Writable {
        final List<Chunk> chunks = new ArrayList<>();
        String[] hosts = new String[0];   // where its first piece's first block is (the driver's scheduling hint)

        public Split() {
        }

        @Override
        public long getLength() {
            long n = 0;
            for (Chunk c : chunks) {
                n += c.stop - c.start;
            }
            return n;
        }

        @Override
        public String[] getLocations() {
            return hosts;
        }

        public int size() {
            return chunks.size();
        }

        public Chunk chunk(int i) {
            return chunks.get(i);
        }

        @Override
        public void write(DataOutput out) throws IOException {
            out.writeInt(chunks.size());
            for (Chunk c : chunks) {
                out.writeUTF(c.path);
                out.writeLong(c.resume);
                out.writeLong(c.start);
                out.writeLong(c.stop);
            }
        }

        @Override
        public void readFields(DataInput in) throws IOException {
            chunks.clear();
            int n = in.readInt();
            for (int i = 0; i < n; i++) {
                chunks.add(new Chunk(in.readUTF(), in.readLong(), in.readLong(), in.readLong()));
            }
        }
    }

    /** Reads a file's bytes at any position through a window, so small batches cost no seek each. */
    static final class Window {
        final FSDataInputStream in;
        final long end;
        final byte[] buf = new byte[1 << 16];
        long from = 0;
        int have = 0;

        Window(FSDataInputStream in, long end) {
            this.in = in;
            this.end = end;
        }

        /** The buffer holding [pos, pos + n) from index pos - from (n <= 64 KiB, pos + n <= end). */
        byte[] at(long pos, int n) throws IOException {
            if (pos < from || pos + n > from + have) {
                int want = (int) Math.min(buf.length, end - pos);
                in.seek(pos);
                in.readFully(buf, 0, want);
                from = pos;
                have = want;
            }
            return buf;
        }

        int i32(long pos) throws IOException {
            byte[] b = at(pos, 4);
            int i = (int) (pos - from);
            return ((b[i] & 0xff) << 24) | ((b[i + 1] & 0xff) << 16) | ((b[i + 2] & 0xff) << 8) | (b[i + 3] & 0xff);
        }

        int i16(long pos) throws IOException {
            byte[] b = at(pos, 2);
            int i = (int) (pos - from);
            return (short) (((b[i] & 0xff) << 8) | (b[i + 1] & 0xff));
        }

        int u8(long pos) throws IOException {
            byte[] b = at(pos, 1);
            return b[(int) (pos - from)] & 0xff;
        }
    }

    /** The cheap checks of kafkadump's plausible_v2_header at pos (no CRC). */
    static boolean plausibleV2(Window w, long pos) throws IOException {
        if (pos + HEADER_SIZE > w.end) {
            return false;
        }
        w.at(pos, HEADER_SIZE);
        int blen = w.i32(pos + 8);
        if (w.u8(pos + 16) != 2 || blen < MIN_BATCH_LENGTH || pos + 12 + blen > w.end) {
            return false;
        }
        int attrs = w.i16(pos + 21);
        int lastOffsetDelta = w.i32(pos + 23);
        int count = w.i32(pos + 57);
        return (attrs & 0xFF80) == 0 && (attrs & 7) <= 4 && count >= 0 && count <= blen && lastOffsetDelta >= -1;
    }

    /** kafkadump's legacy framing_error at pos is None: a magic 0/1 message whose key and value tile it. */
    static boolean legacyFramingOk(Window w, long pos) throws IOException {
        if (pos + 17 > w.end) {
            return false;
        }
        int magic = w.u8(pos + 16);
        int size = w.i32(pos + 8);
        if ((magic != 0 && magic != 1) || size < (magic == 1 ? 22 : 14)) {
            return false;
        }
        long mend = pos + 12 + (long) size;
        if (mend > w.end) {
            return false;
        }
        long p = pos + (magic == 1 ? 26 : 18);
        for (int field = 0; field < 2; field++) {
            if (p + 4 > mend) {
                return false;
            }
            int n = w.i32(p);
            p += 4;
            if (n == -1) {
                continue;
            }
            if (n < 0 || p + n > mend) {
                return false;
            }
            p += n;
        }
        return p == mend;
    }

    /** Could the walk's next item start at pos (kafkadump's plausible_at without the CRC)? */
    static boolean nextOk(Window w, long pos) throws IOException {
        return plausibleV2(w, pos) || legacyFramingOk(w, pos);
    }

    /** Is the stored checksum of the item at pos right: CRC-32C of a v2 batch, CRC-32 of a legacy message? */
    static boolean crcValid(FSDataInputStream in, Window w, long pos, int length, int magic) throws IOException {
        int from = magic == 2 ? CRC_START : 16;
        long stored = w.i32(pos + (magic == 2 ? 17 : 12)) & 0xffffffffL;
        byte[] body = new byte[length + 12 - from];
        in.seek(pos + from);
        in.readFully(body, 0, body.length);
        w.have = 0;   // the stream moved: the window is read again when next used
        java.util.zip.Checksum crc = magic == 2 ? new CRC32C() : new java.util.zip.CRC32();
        crc.update(body, 0, body.length);
        return crc.getValue() == stored;
    }

    /** The chunks of one file: cut at header-walk positions whose previous batch is CRC-valid. */
    static List<Chunk> chunks(FileSystem fs, Path path, long end, long chunkBytes) throws IOException {
        List<Chunk> out = new ArrayList<>();
        String name = path.toString();
        long start = 0, resume = 0;
        if (end > chunkBytes) {   // a smaller file is one chunk: it is not opened here
            try (FSDataInputStream in = fs.open(path)) {
                Window w = new Window(in, end);
                long pos = 0;
                while (pos + 17 <= end) {
                    int magic = w.u8(pos + 16);
                    int length = w.i32(pos + 8);
                    long next = pos + 12 + (long) length;
                    boolean steps = magic == 2 ? pos + HEADER_SIZE <= end && length >= MIN_BATCH_LENGTH
                                               : legacyFramingOk(w, pos);
                    if (!steps || next >= end || !nextOk(w, next)) {
                        break;   // the walk's next step needs the decoder (or this is the last item)
                    }
                    if (next - start >= chunkBytes && length + 12L <= MAX_CRC_READ
                            && crcValid(in, w, pos, length, magic)) {
                        out.add(new Chunk(name, resume, start, next));
                        start = next;
                        resume = pos;
                    }
                    pos = next;
                }
            }
        }
        out.add(new Chunk(name, resume, start, end));
        return out;
    }

    @Override
    public List<InputSplit> getSplits(JobContext job) throws IOException {
        Configuration conf = job.getConfiguration();
        long splitBytes = Math.max(1, conf.getLong(SPLIT_BYTES, 128L << 20));
        long chunkBytes = Math.max(1, Math.min(splitBytes, conf.getLong(CHUNK_BYTES, 4L << 20)));
        long openCost = Math.max(0, conf.getLong(OPEN_COST, 4L << 20));
        List<Piece> pieces = new ArrayList<>();
        for (Path p : FileInputFormat.getInputPaths(job)) {
            FileSystem fs = p.getFileSystem(conf);
            FileStatus st = fs.getFileStatus(p);   // FileNotFoundException: "File ... does not exist"
            Path path = st.getPath();
            // the file's chunks, grouped into pieces as kafkadump cuts local files: piece k starts at the
            // first cut at or after k * splitBytes; pieces packed into tasks as kafkadump packs files
            List<Chunk> piece = new ArrayList<>();
            long pieceBytes = 0;
            long pieceLimit = splitBytes;
            List<Chunk> all = chunks(fs, path, st.getLen(), chunkBytes);
            for (int i = 0; i <= all.size(); i++) {
                Chunk c = i < all.size() ? all.get(i) : null;
                if (c == null || (!piece.isEmpty() && c.start >= pieceLimit)) {
                    pieces.add(new Piece(fs, st, piece, pieceBytes));
                    piece = new ArrayList<>();
                    pieceBytes = 0;
                }
                if (c != null) {
                    if (piece.isEmpty()) {
                        pieceLimit = (c.start / splitBytes + 1) * splitBytes;
                    }
                    piece.add(c);
                    pieceBytes += c.stop - c.start;
                }
            }
        }
        long[] costs = new long[pieces.size()];
        for (int i = 0; i < costs.length; i++) {
            costs[i] = pieces.get(i).bytes + openCost;
        }
        int[] cuts = pack(costs, splitBytes);
        List<InputSplit> splits = new ArrayList<>();
        for (int t = 0; t + 1 < cuts.length; t++) {
            Split split = new Split();
            for (int i = cuts[t]; i < cuts[t + 1]; i++) {
                Piece pc = pieces.get(i);
                if (split.chunks.isEmpty() && !pc.chunks.isEmpty()) {
                    split.hosts = hostsOf(pc.fs, pc.st, pc.chunks.get(0).start, pc.bytes);
                }
                split.chunks.addAll(pc.chunks);
            }
            if (!split.chunks.isEmpty()) {
                splits.add(split);
            }
        }
        return splits;
    }

    /** A file's share: its chunks and their bytes. */
    static final class Piece {
        final FileSystem fs;
        final FileStatus st;
        final List<Chunk> chunks;
        final long bytes;

        Piece(FileSystem fs, FileStatus st, List<Chunk> chunks, long bytes) {
            this.fs = fs;
            this.st = st;
            this.chunks = chunks;
            this.bytes = bytes;
        }
    }

    /**
     * kafkadump's packing rule (kafkadump.spark.splits.pack): consecutive items, a task taking them while
     * their costs stay within target (an item above it alone); that many tasks then evened out, cut at the
     * smallest cap (at most target) that needs no more.  Where the tasks start, and the end.
     */
    public static int[] pack(long[] costs, long target) {
        int[] cuts = nextFit(costs, target);
        if (cuts.length > 2) {
            long total = 0;
            for (long c : costs) {
                total += c;
            }
            int tasks = cuts.length - 1;
            long lo = Math.min(target, Math.max(1, (total + tasks - 1) / tasks));
            long hi = target;
            while (lo < hi) {
                long mid = lo + (hi - lo) / 2;
                if (nextFit(costs, mid).length <= cuts.length) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            cuts = nextFit(costs, lo);
        }
        return cuts;
    }

    static int[] nextFit(long[] costs, long cap) {
        int[] cuts = new int[costs.length + 1];
        int n = 1;
        long load = 0;
        for (int i = 0; i < costs.length; i++) {
            if (i > cuts[n - 1] && load + costs[i] > cap) {
                cuts[n++] = i;
                load = 0;
            }
            load += costs[i];
        }
        if (costs.length > 0) {
            cuts[n++] = costs.length;
        }
        return java.util.Arrays.copyOf(cuts, n);
    }

    static String[] hostsOf(FileSystem fs, FileStatus st, long start, long length) {
        try {
            org.apache.hadoop.fs.BlockLocation[] blocks = fs.getFileBlockLocations(st, start, Math.max(1, length));
            return blocks == null || blocks.length == 0 ? new String[0] : blocks[0].getHosts();
        } catch (IOException | RuntimeException e) {
            return new String[0];
        }
    }

    @Override
    public RecordReader<LongWritable, BytesWritable> createRecordReader(InputSplit split, TaskAttemptContext ctx) {
        return new Reader();
    }

    /** One record per chunk: (its start, the bytes from its resume position to its end). */
    static final class Reader extends RecordReader<LongWritable, BytesWritable> {
        Split split;
        Configuration conf;
        int next = 0;
        LongWritable key;
        BytesWritable value;

        @Override
        public void initialize(InputSplit s, TaskAttemptContext ctx) {
            split = (Split) s;
            conf = ctx.getConfiguration();
        }

        @Override
        public boolean nextKeyValue() throws IOException {
            if (next >= split.size()) {
                return false;
            }
            Chunk c = split.chunk(next++);
            long n = c.stop - c.resume;
            if (n > MAX_CHUNK) {
                throw new IOException(c.path + ": " + n + " bytes from position " + c.resume
                        + " cannot be cut at a batch boundary (a chunk holds at most 2 GiB)");
            }
            byte[] bytes = new byte[(int) n];
            Path p = new Path(c.path);
            try (FSDataInputStream in = p.getFileSystem(conf).open(p)) {
                in.seek(c.resume);
                in.readFully(bytes, 0, bytes.length);
            }
            key = new LongWritable(c.start);
            value = new BytesWritable(bytes);   // a new array each time: PySpark keeps what it is given
            return true;
        }

        @Override
        public LongWritable getCurrentKey() {
            return key;
        }

        @Override
        public BytesWritable getCurrentValue() {
            return value;
        }

        @Override
        public float getProgress() {
            return split.size() == 0 ? 1f : (float) next / split.size();
        }

        @Override
        public void close() {
        }
    }

    public static final StructType SCHEMA = DataTypes.createStructType(new org.apache.spark.sql.types.StructField[]{
        DataTypes.createStructField("path", DataTypes.StringType, false),
        DataTypes.createStructField("resume", DataTypes.LongType, false),
        DataTypes.createStructField("start", DataTypes.LongType, false),
        DataTypes.createStructField("content", DataTypes.BinaryType, false),
    });

    /** A job reading paths with the session's Hadoop configuration and these sizes. */
    static Job job(SparkSession spark, String[] paths, long splitBytes, long chunkBytes, long openCost)
            throws IOException {
        Configuration conf = new Configuration(spark.sparkContext().hadoopConfiguration());
        conf.setLong(SPLIT_BYTES, splitBytes);
        conf.setLong(CHUNK_BYTES, chunkBytes);
        conf.setLong(OPEN_COST, openCost);
        Job job = Job.getInstance(conf);
        Path[] ps = new Path[paths.length];
        for (int i = 0; i < paths.length; i++) {
            ps[i] = new Path(paths[i]);
        }
        FileInputFormat.setInputPaths(job, ps);
        return job;
    }

    /** The chunks of paths as rows (path, resume, start, content), one Spark partition per split. */
    @SuppressWarnings("unchecked")
    public static Dataset<Row> chunkFrame(SparkSession spark, String[] paths, long splitBytes, long chunkBytes,
                                          long openCost) throws IOException {
        Job job = job(spark, paths, splitBytes, chunkBytes, openCost);
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        JavaNewHadoopRDD<LongWritable, BytesWritable> rdd = (JavaNewHadoopRDD<LongWritable, BytesWritable>)
            jsc.newAPIHadoopRDD(job.getConfiguration(), KafkaSegmentInputFormat.class, LongWritable.class,
                                BytesWritable.class);
        JavaRDD<Row> rows = rdd.mapPartitionsWithInputSplit(KafkaSegmentInputFormat::rowsOf, true);
        return spark.createDataFrame(rows, SCHEMA);
    }

    /** A split's records as rows: the reader gives one record per chunk, in the split's order. */
    static Iterator<Row> rowsOf(InputSplit s, Iterator<Tuple2<LongWritable, BytesWritable>> records) {
        Split split = (Split) s;
        return new Iterator<Row>() {
            int i = 0;

            @Override
            public boolean hasNext() {
                return records.hasNext();
            }

            @Override
            public Row next() {
                Tuple2<LongWritable, BytesWritable> r = records.next();
                Chunk c = split.chunk(i++);
                return RowFactory.create(c.path, c.resume, r._1().get(), r._2().getBytes());
            }
        };
    }

    /** The planned chunks of paths, as "path resume start stop" lines per split (for tests and planning). */
    public static String[][] plan(SparkSession spark, String[] paths, long splitBytes, long chunkBytes, long openCost)
            throws IOException {
        Job job = job(spark, paths, splitBytes, chunkBytes, openCost);
        List<InputSplit> splits = new KafkaSegmentInputFormat().getSplits(job);
        String[][] out = new String[splits.size()][];
        for (int i = 0; i < splits.size(); i++) {
            Split sp = (Split) splits.get(i);
            out[i] = new String[sp.size()];
            for (int j = 0; j < sp.size(); j++) {
                Chunk c = sp.chunk(j);
                out[i][j] = c.resume + " " + c.start + " " + c.stop + " " + c.path;
            }
        }
        return out;
    }
}
