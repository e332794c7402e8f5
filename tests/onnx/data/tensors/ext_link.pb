Bxj
locationlink.binp