"""The peer of `dtf gen-records --profile spark`: the original job's PySpark
conversion (TensorFlowOnSpark's gen_tfrecords.py), CSV rows to
tf.train.Example in the executors, one GZIP TFRecord file per RDD partition.

Usage: spark-submit gen_tfrecords.py CSV OUT_DIR PARTITIONS
Prints "rows N" on stdout. The executors' Python must have TensorFlow.
"""
import os
import sys

from pyspark import SparkConf, SparkContext

# The census columns (examples/census/dtf.toml): name, is an integer.
COLUMNS = [
    ("age", True), ("workclass", False), ("fnlwgt", True),
    ("education", False), ("education_num", True),
    ("marital_status", False), ("occupation", False),
    ("relationship", False), ("race", False), ("gender", False),
    ("capital_gain", True), ("capital_loss", True),
    ("hours_per_week", True), ("native_country", False), ("income", False),
]
LABELS = {"<=50K": 0, ">50K": 1, "<=50K.": 0, ">50K.": 1}


def write_partition(index, lines, out_dir):
    import tensorflow as tf

    path = os.path.join(out_dir, "part-%05d.tfrecord.gz" % index)
    rows = 0
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    with tf.io.TFRecordWriter(path, options) as writer:
        for line in lines:
            cells = [c.strip() for c in line.split(",")]
            if len(cells) != len(COLUMNS):
                continue
            feature = {}
            for (name, is_int), cell in zip(COLUMNS, cells):
                if cell == "?":
                    continue
                if name == "income":
                    feature["label"] = tf.train.Feature(
                        int64_list=tf.train.Int64List(value=[LABELS[cell]]))
                elif is_int:
                    feature[name] = tf.train.Feature(
                        int64_list=tf.train.Int64List(value=[int(cell)]))
                else:
                    feature[name] = tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[cell.encode()]))
            example = tf.train.Example(
                features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
            rows += 1
    yield rows


def main():
    csv, out_dir, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sc = SparkContext(conf=SparkConf().setAppName("gen_tfrecords"))
    sc.setLogLevel("WARN")
    os.makedirs(out_dir, exist_ok=True)
    rows = (sc.textFile(csv, minPartitions=partitions)
            .mapPartitionsWithIndex(
                lambda i, it: write_partition(i, it, out_dir))
            .sum())
    print("rows %d" % rows)
    sc.stop()


if __name__ == "__main__":
    main()
