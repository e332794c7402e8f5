Bxj
locationmissing.binp