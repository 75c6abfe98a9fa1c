"""The base every layer uses: finding codes and severities, kafkadump's errors, small value classes."""
