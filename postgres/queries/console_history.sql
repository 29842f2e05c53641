-- The charts' history: samples since @since in buckets of @bucket, the
-- largest lag and open-findings count of each.
SELECT date_bin(@bucket::interval, minute, @since::timestamptz) AS at,
       max(lag_seconds), max(open_findings)
  FROM console_samples
 WHERE minute >= @since::timestamptz
 GROUP BY 1
 ORDER BY 1
